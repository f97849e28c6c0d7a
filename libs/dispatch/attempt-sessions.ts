/**
 * One dispatch attempt's session reads and writes. Reads see the committed session (and this
 * attempt's own writes); writes stay here until the outcome transaction, where each is applied only
 * if the row is still at the version this attempt read — else the attempt conflicts
 * (SessionConflictError) and is run again. A failed attempt's writes are simply never applied.
 *
 * telegraf's `session()` shares one in-memory object between updates of the same key that run at
 * the same time in one process (its cache), and writes it in `finally`. So that no attempt commits
 * another's changes (committed or not, a failed one's included), a write conflicts — the attempt runs
 * again, its replies unsent — when its value, or any object it read or assigned through its
 * context's session accessor, was also held by another attempt (session-holders.ts), or
 * when it writes a key it never read with a value that reached it through its accessors (it joined
 * another update's cached object, based on a version it does not know). An object read here is also
 * handed out behind a proxy that notes access from another attempt.
 */
import type { Pool } from 'pg';
import { unicodeProblem } from '../outbound/message';
import { dispatchStorage } from './context';
import { DispatchClosedError } from './errors';
import { SessionConflictError, SessionValueError } from './session-errors';
import { heldBy, noteHeld, sharedWithAnother } from './session-holders';
import {
  sessionDeleteIfVersion,
  sessionRead,
  sessionWritesIfVersion,
  type PrefetchedSession,
  type SessionRead,
  type SessionWrite,
} from './session-queries';
import type { Queryable } from '../db/pool';

/** Longest session key accepted (keys are ids, not text). */
export const SESSION_KEY_MAX = 512;

interface Entry {
  /** The version the write must match (0: no row when read). */
  version: number;
  /** The object handed out for the read value (tracked), or the read value itself. */
  read: unknown;
  write?: { json: string } | { deleted: true };
  /** Another attempt touched this attempt's object, or this attempt wrote one it never read. */
  conflict?: boolean;
}

/** Objects handed out by `get`, with the attempt and entry they belong to. */
const owners = new WeakMap<object, { sessions: AttemptSessions; entry: Entry }>();

export class AttemptSessions {
  private readonly entries = new Map<string, Entry>();
  private closed = false;

  /** Who this attempt is to session-holders.ts (its AttemptWork; itself when used alone). */
  private readonly attempt: object;

  constructor(
    private readonly db: { pool: Pool; botId: string; ttlMs: number },
    attempt?: object,
    /** The session the claim read for this update (session-queries.ts), used instead of reading its key. */
    private prefetched?: PrefetchedSession,
  ) {
    this.attempt = attempt ?? this;
  }

  /** The attempt is over: later reads and writes (a handler still running after its timeout) are refused. */
  close(): void {
    this.closed = true;
  }

  /** `fallback`: the value of an absent session (the store's defaultSession), handed out tracked like a read one. */
  async get(key: string, fallback?: () => unknown): Promise<unknown> {
    this.check(key, 'get');
    const known = this.entries.get(key);
    if (known) {
      if (!known.write) return known.read;
      return 'deleted' in known.write ? undefined : this.track(known, JSON.parse(known.write.json));
    }
    const { value, version } = await this.read(key);
    this.check(key, 'get');
    const entry: Entry = { version, read: undefined };
    entry.read = this.track(entry, value === undefined && fallback ? fallback() : value);
    this.entries.set(key, entry);
    noteHeld(entry.read, this.attempt);
    return entry.read;
  }

  async set(key: string, value: unknown): Promise<void> {
    this.check(key, 'set');
    const json = sessionJson(key, value);
    const entry = await this.entryToWrite(key, value);
    entry.write = { json };
    noteHeld(value, this.attempt); // another attempt writing this object later conflicts
  }

  async delete(key: string): Promise<void> {
    this.check(key, 'delete');
    const entry = await this.entryToWrite(key, undefined);
    entry.write = { deleted: true };
  }

  /** Applies the writes in the outcome transaction (commitSessions with this attempt alone). */
  commit(client: Queryable): Promise<void> {
    return commitSessions(client, [this]);
  }

  /** What commitSessions applies: this attempt's writes, or a SessionConflictError if one cannot land. */
  plannedWrites(): { botId: string; ttlMs: number; writes: SessionWrite[]; deletes: SessionWrite[] } {
    const writes: SessionWrite[] = [];
    const deletes: SessionWrite[] = [];
    for (const [key, entry] of this.entries) {
      if (!entry.write) continue;
      if (entry.conflict) throw new SessionConflictError(key);
      if ('deleted' in entry.write) deletes.push({ key, json: '', version: entry.version });
      else writes.push({ key, json: entry.write.json, version: entry.version });
    }
    return { botId: this.db.botId, ttlMs: this.db.ttlMs, writes, deletes };
  }

  private check(key: string, op: string): void {
    if (this.closed) throw new DispatchClosedError(`session ${op}`, 'session access');
    if (typeof key !== 'string' || key.length === 0 || key.length > SESSION_KEY_MAX || unicodeProblem(key))
      throw new SessionValueError(
        String(key).slice(0, 64),
        `the key must be a non-empty string of at most ${SESSION_KEY_MAX} characters of valid Unicode`,
      );
  }

  /** The committed session of `key`: the claim's read of it if it has one (once: later reads are of entries), else a query. */
  private async read(key: string): Promise<SessionRead> {
    const prefetched = this.prefetched;
    if (prefetched?.key === key) {
      this.prefetched = undefined;
      return prefetched;
    }
    return sessionRead(this.db.pool, this.db.botId, key);
  }

  /** The entry a write goes to; a key this attempt never read is read now (or conflicts, see the file comment). */
  private async entryToWrite(key: string, value: unknown): Promise<Entry> {
    const owner = typeof value === 'object' && value !== null ? owners.get(value) : undefined;
    let entry = this.entries.get(key);
    if (owner && owner.sessions !== this) owner.entry.conflict = true; // it may hold this attempt's changes too
    const shared = (owner !== undefined && owner.sessions !== this) || sharedWithAnother(value, this.attempt);
    if (shared || (!entry && value !== undefined && heldBy(value, this.attempt))) {
      // another attempt's object, or telegraf's cached one this attempt joined without reading the key
      entry ??= { version: 0, read: undefined };
      entry.conflict = true;
    }
    if (!entry) {
      // a write without a read in this attempt (the store used directly): conditioned on the version now
      const { version } = await this.read(key);
      entry = { version, read: undefined };
    }
    this.entries.set(key, entry);
    return entry;
  }

  /** The object handed out for a read value: itself, behind a proxy that notes another attempt's access. */
  private track(entry: Entry, value: unknown): unknown {
    if (typeof value !== 'object' || value === null) return value;
    const noteAccess = () => {
      const work = dispatchStorage.getStore()?.work;
      if (work !== this.attempt && work?.sessionsIfUsed !== this) entry.conflict = true;
    };
    const handler: ProxyHandler<object> = {
      get(t, p): unknown {
        noteAccess();
        return Reflect.get(t, p) as unknown;
      },
      set(t, p, v) {
        noteAccess();
        return Reflect.set(t, p, v);
      },
      has(t, p) {
        noteAccess();
        return Reflect.has(t, p);
      },
      deleteProperty(t, p) {
        noteAccess();
        return Reflect.deleteProperty(t, p);
      },
      defineProperty(t, p, d) {
        noteAccess();
        return Reflect.defineProperty(t, p, d);
      },
      ownKeys(t) {
        noteAccess();
        return Reflect.ownKeys(t);
      },
    };
    const proxy = new Proxy(value, handler);
    owners.set(proxy, { sessions: this, entry });
    return proxy;
  }
}

/**
 * Applies the session writes of the attempts of one outcome transaction, each conditioned on the
 * version its attempt read: one statement for all of them (two when some create their row) rather
 * than one per attempt, keys sorted (two transactions that still lock rows in different orders
 * deadlock, which the outcome writer retries as a transient failure). Any write that cannot
 * land throws SessionConflictError and the whole transaction rolls back: the outcome writer then
 * writes the batch's outcomes one by one, so only the attempt that conflicted runs again. Two attempts
 * of one batch writing the same key (a per-user key from two chats) cannot both land: that is such a
 * conflict too, and the one written first alone wins.
 */
export async function commitSessions(client: Queryable, attempts: AttemptSessions[]): Promise<void> {
  const batches = new Map<string, { botId: string; ttlMs: number; writes: SessionWrite[] }>();
  const deletes: { botId: string; write: SessionWrite }[] = [];
  const seen = new Set<string>();
  for (const a of attempts) {
    const planned = a.plannedWrites();
    for (const w of [...planned.writes, ...planned.deletes]) {
      const id = `${planned.botId}\u0000${w.key}`;
      if (seen.has(id)) throw new SessionConflictError(w.key);
      seen.add(id);
    }
    const batchId = `${planned.botId}\u0000${planned.ttlMs}`;
    const batch = batches.get(batchId) ?? batches.set(batchId, { ...planned, writes: [] }).get(batchId)!;
    batch.writes.push(...planned.writes);
    deletes.push(...planned.deletes.map((write) => ({ botId: planned.botId, write })));
  }
  for (const { botId, write } of deletes.sort((x, y) => (x.write.key < y.write.key ? -1 : 1))) {
    if (!(await sessionDeleteIfVersion(client, { botId, key: write.key, version: write.version })))
      throw new SessionConflictError(write.key);
  }
  for (const batch of batches.values()) {
    if (batch.writes.length === 0) continue;
    batch.writes.sort((x, y) => (x.key < y.key ? -1 : x.key > y.key ? 1 : 0));
    const [lost] = await sessionWritesIfVersion(client, batch);
    if (lost !== undefined) throw new SessionConflictError(lost);
  }
}

/**
 * The JSON text of a session value, or a SessionValueError naming the key and what is wrong (never
 * the value): functions, symbols, BigInts, non-finite numbers, cycles and strings PostgreSQL's jsonb
 * cannot hold (NUL, lone surrogates) are refused instead of being dropped or mangled silently.
 */
export function sessionJson(key: string, value: unknown): string {
  let problem: string | undefined;
  const replacer = (k: string, v: unknown): unknown => {
    if (problem) return undefined;
    const where = k === '' ? 'its value' : `its field "${k.slice(0, 64)}"`;
    if (typeof v === 'function') problem = `${where} is a function (not JSON)`;
    else if (typeof v === 'symbol') problem = `${where} is a symbol (not JSON)`;
    else if (typeof v === 'bigint') problem = `${where} is a BigInt (not JSON; store it as a string)`;
    else if (typeof v === 'number' && !Number.isFinite(v)) problem = `${where} is ${v} (not JSON)`;
    else if (typeof v === 'string' && unicodeProblem(v)) problem = `a string in ${where} ${unicodeProblem(v)}`;
    else if (unicodeProblem(k)) problem = `a field name ${unicodeProblem(k)}`;
    return problem ? undefined : v;
  };
  let json: string | undefined;
  try {
    json = JSON.stringify(value, replacer);
  } catch (err) {
    throw new SessionValueError(
      key,
      err instanceof TypeError && /circular/i.test(err.message)
        ? 'its value has a cycle (not JSON)'
        : 'its value is not JSON',
    );
  }
  if (problem) throw new SessionValueError(key, problem);
  if (json === undefined) throw new SessionValueError(key, 'its value is not JSON');
  return json;
}
