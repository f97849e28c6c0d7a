/**
 * The SQL of relay.sessions (sql/0026_sessions.sql): telegraf sessions of a bot's handlers. Writes
 * made during a dispatch are conditioned on the version the attempt read (optimistic concurrency);
 * writes outside a dispatch, and operators' erasures, are unconditional.
 */
import type { Queryable } from '../db/pool';

/** A session as read: its value (undefined when absent or expired) and the version a write must match (0: no row). */
export interface SessionRead {
  value: unknown;
  version: number;
}

/**
 * The committed session of `key`. An expired row reads as no value but keeps its version, so a
 * write that replaces it is still conditioned on it (a concurrent writer of the same key conflicts).
 */
export async function sessionRead(q: Queryable, botId: string, key: string): Promise<SessionRead> {
  const { rows } = await q.query<{ value: unknown; version: string; live: boolean }>(
    `select value, version::text, expires_at > now() as live from relay.sessions where bot_id = $1 and key = $2`,
    [botId, key],
  );
  const row = rows[0];
  return row ? readOf(row) : { value: undefined, version: 0 };
}

/** A session row as read: an expired one has no value but keeps its version. */
const readOf = (r: { value?: unknown; version?: unknown; live?: unknown }): SessionRead => ({
  value: r.live === true ? r.value : undefined,
  version: Number(r.version),
});

/**
 * A claimed inbox row's session under telegraf's default key (`${from.id}:${chat.id}`), read in the
 * claim statement (alias `t`) so a handler using `session()` does not pay a round trip to read it:
 * json `{key, version, live, value}`, null when the update has no sender or no chat. It is a snapshot
 * of the claim: a write based on it is still conditioned on its version at commit.
 */
export const SESSION_PREFETCH_COLUMNS = `(select json_build_object('key', k.key, 'version', coalesce(s.version, 0)::text,
                    'live', coalesce(s.expires_at > now(), false), 'value', s.value)
                   from (select (t.payload->t.update_type->'from'->>'id') || ':' || t.chat_id::text as key) k
                   left join relay.sessions s on s.bot_id = t.bot_id and s.key = k.key
                  where k.key is not null) as session`;

/** A session read in the claim (SESSION_PREFETCH_COLUMNS): the key it was read under, and the read. */
export interface PrefetchedSession extends SessionRead {
  key: string;
}

/** The claim's `session` column as a PrefetchedSession; undefined when absent or not of that shape. */
export function prefetchedSession(column: unknown): PrefetchedSession | undefined {
  if (typeof column !== 'object' || column === null) return undefined;
  const c = column as { key?: unknown; version?: unknown; live?: unknown; value?: unknown };
  const read = readOf(c);
  if (typeof c.key !== 'string' || !Number.isSafeInteger(read.version) || read.version < 0) return undefined;
  return { key: c.key, ...read };
}

const TTL = `now() + $4::bigint * interval '1 millisecond'`;

/** One version-conditioned write of a batch (sessionWritesIfVersion). */
export interface SessionWrite {
  key: string;
  json: string;
  version: number;
}

/**
 * Writes a batch of sessions of one bot, each only if its row is still at its `version` (0: still no
 * row), in at most two statements (new rows, then updated ones) whatever the batch's size — the
 * group commit of many attempts pays for its sessions once, not once per attempt. Returns the keys
 * that did not land (another writer got there first). Keys must be distinct within the batch.
 */
export async function sessionWritesIfVersion(
  q: Queryable,
  args: { botId: string; ttlMs: number; writes: SessionWrite[] },
): Promise<string[]> {
  const { botId, ttlMs, writes } = args;
  const fresh = writes.filter((w) => w.version === 0);
  const known = writes.filter((w) => w.version !== 0);
  const landed = new Set<string>();
  if (fresh.length > 0) {
    const { rows } = await q.query<{ key: string }>(
      `insert into relay.sessions (bot_id, key, value, version, expires_at)
       select $1, w.key, w.value::jsonb, 1, now() + $2::bigint * interval '1 millisecond'
         from unnest($3::text[], $4::text[]) as w(key, value)
       on conflict (bot_id, key) do nothing
       returning key`,
      [botId, ttlMs, fresh.map((w) => w.key), fresh.map((w) => w.json)],
    );
    for (const r of rows) landed.add(r.key);
  }
  if (known.length > 0) {
    const { rows } = await q.query<{ key: string }>(
      `update relay.sessions s
          set value = w.value::jsonb, version = s.version + 1, updated_at = now(),
              expires_at = now() + $2::bigint * interval '1 millisecond'
         from unnest($3::text[], $4::text[], $5::bigint[]) as w(key, value, version)
        where s.bot_id = $1 and s.key = w.key and s.version = w.version
       returning s.key`,
      [botId, ttlMs, known.map((w) => w.key), known.map((w) => w.json), known.map((w) => w.version)],
    );
    for (const r of rows) landed.add(r.key);
  }
  return writes.filter((w) => !landed.has(w.key)).map((w) => w.key);
}

/**
 * Deletes the session if it is still at `version`. For `version` 0 (the attempt saw no row) there is
 * nothing to delete: it conflicts only if a row has appeared since.
 */
export async function sessionDeleteIfVersion(
  q: Queryable,
  args: { botId: string; key: string; version: number },
): Promise<boolean> {
  const { botId, key, version } = args;
  if (version === 0) {
    const { rowCount } = await q.query(`select 1 from relay.sessions where bot_id = $1 and key = $2`, [botId, key]);
    return rowCount === 0;
  }
  const { rowCount } = await q.query(`delete from relay.sessions where bot_id = $1 and key = $2 and version = $3`, [
    botId,
    key,
    version,
  ]);
  return rowCount === 1;
}

/** Outside a dispatch: writes the session whatever its version. */
export async function sessionUpsert(
  q: Queryable,
  args: { botId: string; key: string; json: string; ttlMs: number },
): Promise<void> {
  await q.query(
    `insert into relay.sessions as s (bot_id, key, value, version, expires_at)
     values ($1, $2, $3::jsonb, 1, ${TTL})
     on conflict (bot_id, key) do update
       set value = excluded.value, version = s.version + 1, updated_at = now(), expires_at = excluded.expires_at`,
    [args.botId, args.key, args.json, args.ttlMs],
  );
}

/** The session row an operator reads (expired rows included, marked as such). */
export interface SessionRow {
  bot_id: string;
  key: string;
  value: unknown;
  version: string;
  created_at: Date;
  updated_at: Date;
  expires_at: Date;
  expired: boolean;
}

export async function sessionShow(q: Queryable, botId: string, key: string): Promise<SessionRow | undefined> {
  const { rows } = await q.query<SessionRow>(
    `select bot_id, key, value, version::text, created_at, updated_at, expires_at, expires_at <= now() as expired
       from relay.sessions where bot_id = $1 and key = $2`,
    [botId, key],
  );
  return rows[0];
}

/** Deletes the session whatever its version; the deleted row's version, or undefined if there was none. */
export async function sessionErase(q: Queryable, botId: string, key: string): Promise<string | undefined> {
  const { rows } = await q.query<{ version: string }>(
    `delete from relay.sessions where bot_id = $1 and key = $2 returning version::text`,
    [botId, key],
  );
  return rows[0]?.version;
}
