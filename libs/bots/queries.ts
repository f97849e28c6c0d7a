/**
 * The SQL of relay.bots (sql/0034_bots.sql), one function per statement. The token column is read
 * only by `botsServed` (for a process that serves bots); every other read leaves it out, so nothing
 * that lists or shows a bot can carry its token, even encrypted.
 */
import type { Queryable } from '../db/pool';

export interface BotRow {
  id: string;
  username: string | null;
  handlers: string | null;
  capture_url: string | null;
  allowed_chat_ids: string[];
  ops_chat_id: string | null;
  enabled: boolean;
  settings: Record<string, string>;
  token_key_id: string;
  version: string;
  created_at: Date;
  updated_at: Date;
}

export interface BotUpsert {
  id: string;
  username: string | null;
  tokenEncrypted: Buffer;
  tokenKeyId: string;
  handlers: string | null;
  captureUrl: string | null;
  allowedChatIds: string[];
  opsChatId: string | null;
  enabled: boolean;
  settings: Record<string, string>;
}

const COLUMNS = `id, username, handlers, capture_url, allowed_chat_ids, ops_chat_id, enabled, settings, token_key_id,
                 version::text as version, created_at, updated_at`;

/** Inserts the bot, or replaces what an earlier registration of the same bot said; `created` tells which. */
export async function botUpsert(db: Queryable, b: BotUpsert): Promise<{ bot: BotRow; created: boolean }> {
  const { rows } = await db.query<BotRow & { created: boolean }>(
    `insert into relay.bots as x (id, username, token_encrypted, token_key_id, handlers, capture_url, allowed_chat_ids,
                                  ops_chat_id, enabled, settings)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
     on conflict (id) do update
       set username = excluded.username, token_encrypted = excluded.token_encrypted,
           token_key_id = excluded.token_key_id, handlers = excluded.handlers, capture_url = excluded.capture_url,
           allowed_chat_ids = excluded.allowed_chat_ids, ops_chat_id = excluded.ops_chat_id,
           enabled = excluded.enabled, settings = excluded.settings, version = x.version + 1, updated_at = now()
     returning ${COLUMNS}, (xmax = 0) as created`,
    [
      b.id,
      b.username,
      b.tokenEncrypted,
      b.tokenKeyId,
      b.handlers,
      b.captureUrl,
      b.allowedChatIds,
      b.opsChatId,
      b.enabled,
      b.settings,
    ],
  );
  const { created, ...bot } = rows[0];
  return { bot, created };
}

export async function botsList(db: Queryable): Promise<BotRow[]> {
  return (await db.query<BotRow>(`select ${COLUMNS} from relay.bots order by id`)).rows;
}

export async function botById(db: Queryable, id: string): Promise<BotRow | null> {
  const { rows } = await db.query<BotRow>(`select ${COLUMNS} from relay.bots where id = $1`, [id]);
  return rows[0] ?? null;
}

export async function botSetEnabled(db: Queryable, id: string, enabled: boolean): Promise<BotRow | null> {
  const { rows } = await db.query<BotRow>(
    `update relay.bots set enabled = $2, version = version + 1, updated_at = now()
      where id = $1 and enabled is distinct from $2
      returning ${COLUMNS}`,
    [id, enabled],
  );
  return rows[0] ?? botById(db, id);
}

/** Deletes the registration (the bot's rows in the other tables stay for the audit); false when absent. */
export async function botDelete(db: Queryable, id: string): Promise<boolean> {
  return ((await db.query('delete from relay.bots where id = $1', [id])).rowCount ?? 0) > 0;
}

/** The enabled bots with their sealed tokens: what a fleet process serves. */
export async function botsServed(db: Queryable): Promise<(BotRow & { token_encrypted: Buffer })[]> {
  return (
    await db.query<BotRow & { token_encrypted: Buffer }>(
      `select ${COLUMNS}, token_encrypted from relay.bots where enabled order by id`,
    )
  ).rows;
}
