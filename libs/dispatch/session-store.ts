/**
 * Transactional telegraf sessions: `bot.use(session({ store: dispatch.sessionStore() }))`.
 *
 * Inside a dispatch attempt the store reads the committed session and keeps writes with the attempt
 * (attempt-sessions.ts): they commit in the transaction that marks the update handled, conditioned
 * on the version read, and vanish with a failed or timed-out attempt. Outside a dispatch (a timer
 * or a script with the store, no attempt) it reads and writes relay.sessions directly, at once and
 * unconditionally. A session expires SESSION_TTL after its last write.
 */
import type { Pool } from 'pg';
import { dispatchStorage } from './context';
import { sessionJson } from './attempt-sessions';
import { DispatchDatabaseUnavailableError } from './session-errors';
import { sessionErase, sessionRead, sessionUpsert } from './session-queries';

export const SESSION_TTL_MS_DEFAULT = 30 * 86_400_000;

/** A telegraf session store (telegraf's AsyncSessionStore: async get/set/delete) over relay.sessions. */
export interface DispatchSessionStore<T = unknown> {
  get(key: string): Promise<T | undefined>;
  set(key: string, value: T): Promise<void>;
  delete(key: string): Promise<void>;
}

export interface SessionStoreOptions {
  /** For use outside a dispatch: the database (inside one, the worker's is used). */
  pool?: Pool;
  /** For use outside a dispatch: the bot whose sessions these are (the numeric prefix of its token). */
  botId?: string;
  /** For use outside a dispatch: SESSION_TTL in ms (default 30 days). */
  ttlMs?: number;
}

/** What the store itself may be told about the sessions it serves. */
export interface SessionValueOptions<T> {
  /**
   * The value of a session that does not exist yet, as telegraf's `defaultSession` but given to the
   * store (whose reads then never come back empty). Either works: a default object that telegraf's
   * cache shares between updates is followed through the context's accessor (session-holders.ts).
   */
  defaultSession?: () => T;
}

/**
 * The session store. Inside a dispatch it belongs to the running attempt (whatever `opts` say);
 * outside one it needs `pool` and `botId` and writes at once.
 */
export function sessionStore<T = unknown>(
  opts: SessionStoreOptions & SessionValueOptions<T> = {},
): DispatchSessionStore<T> {
  const direct = () => {
    if (!opts.pool || !opts.botId) throw new DispatchDatabaseUnavailableError('a session store outside a dispatch');
    return { pool: opts.pool, botId: opts.botId, ttlMs: opts.ttlMs ?? SESSION_TTL_MS_DEFAULT };
  };
  const attempt = () => dispatchStorage.getStore()?.work?.sessions;
  return {
    async get(key) {
      const s = attempt();
      if (s) return (await s.get(key, opts.defaultSession)) as T | undefined;
      const d = direct();
      const { value } = await sessionRead(d.pool, d.botId, key);
      return value === undefined ? opts.defaultSession?.() : (value as T);
    },
    async set(key, value) {
      const s = attempt();
      if (s) return s.set(key, value);
      const d = direct();
      await sessionUpsert(d.pool, { botId: d.botId, key, json: sessionJson(key, value), ttlMs: d.ttlMs });
    },
    async delete(key) {
      const s = attempt();
      if (s) return s.delete(key);
      const d = direct();
      await sessionErase(d.pool, d.botId, key);
    },
  };
}
