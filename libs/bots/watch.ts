/**
 * What a fleet process serves: the enabled bots of relay.bots with their tokens decrypted, kept
 * current within seconds of a change. A NOTIFY on `tg_relay_bots` (sent by the table's trigger)
 * triggers a re-read; a re-read on a timer covers a missed notification and transaction-pooled
 * connections, where LISTEN is not available. Re-reads run one at a time; one asked for while
 * another runs is run once after it.
 *
 * A bot whose token cannot be decrypted (no TOKEN_ENCRYPTION_KEY, another key, a damaged value) is
 * not served and is listed in `problems` with the reason, which names the bot, never the token.
 */
import type { Pool } from '../db/pool';
import { every, type Ticker } from '../lifecycle/timers';
import type { Logger } from '../observability/logger';
import { createWakeListener, type WakeListener } from '../queue/wake-listener';
import { errorMessage } from '../errors';
import { botsServed, type BotRow } from './queries';
import { decryptToken, type TokenKey } from './token-crypto';

export const BOTS_CHANNEL = 'tg_relay_bots';
export const BOTS_REFRESH_MS_DEFAULT = 2_000;

export interface ServedBot extends BotRow {
  /** The decrypted token: pass it to a Bot API client, never to a log or an answer. */
  readonly token: string;
}

export interface BotChanges {
  added: ServedBot[];
  changed: ServedBot[];
  removed: string[];
}

export interface BotWatch {
  /** The bots served now, by id. */
  bots(): ReadonlyMap<string, ServedBot>;
  /** Enabled bots that cannot be served, by id, and why. */
  problems(): ReadonlyMap<string, string>;
  /** Calls `fn` after every re-read that changed what is served. */
  onChange(fn: (c: BotChanges) => void): () => void;
  /** Re-reads now (resolves when a re-read that started after this call has ended). */
  refresh(): Promise<void>;
  stop(): Promise<void>;
}

export async function watchBots(opts: {
  pool: Pool;
  /** LISTEN connection URL; omitted (transaction pool mode): the timer alone. */
  listenUrl?: string;
  key: TokenKey | undefined;
  logger: Logger;
  refreshMs?: number;
}): Promise<BotWatch> {
  let served = new Map<string, ServedBot>();
  let problems = new Map<string, string>();
  const listeners = new Set<(c: BotChanges) => void>();
  let current: Promise<void> | undefined;
  let again: Promise<void> | undefined;

  const read = async (): Promise<void> => {
    const rows = await botsServed(opts.pool);
    const next = new Map<string, ServedBot>();
    const nextProblems = new Map<string, string>();
    for (const { token_encrypted, ...row } of rows) {
      if (!opts.key) {
        nextProblems.set(row.id, 'TOKEN_ENCRYPTION_KEY is not set: registered bots cannot be served');
        continue;
      }
      try {
        next.set(row.id, { ...row, token: decryptToken(opts.key, row.id, token_encrypted, row.token_key_id) });
      } catch (err) {
        nextProblems.set(row.id, errorMessage(err) ?? 'the token does not decrypt');
      }
    }
    const changes: BotChanges = { added: [], changed: [], removed: [] };
    for (const [id, b] of next) {
      const before = served.get(id);
      if (!before) changes.added.push(b);
      else if (before.version !== b.version) changes.changed.push(b);
    }
    for (const id of served.keys()) if (!next.has(id)) changes.removed.push(id);
    for (const [id, why] of nextProblems)
      if (problems.get(id) !== why) opts.logger.error({ botId: id, problem: why }, 'registered bot cannot be served');
    served = next;
    problems = nextProblems;
    if (changes.added.length + changes.changed.length + changes.removed.length === 0) return;
    for (const fn of listeners) fn(changes);
  };

  // one re-read at a time; asked for during one, one more runs after it (covering every ask)
  const refresh = (): Promise<void> => {
    if (!current) {
      current = read().finally(() => (current = undefined));
      return current;
    }
    again ??= current.then(
      () => ((again = undefined), refresh()),
      () => ((again = undefined), refresh()),
    );
    return again;
  };
  const refreshLogged = () =>
    refresh().catch((err: unknown) =>
      opts.logger.warn({ err: { message: errorMessage(err) } }, 'bot registry re-read failed'),
    );

  await refresh();
  const ticker: Ticker = every(opts.refreshMs ?? BOTS_REFRESH_MS_DEFAULT, refreshLogged, {
    unref: true,
    onError: () => undefined,
  });
  let listener: WakeListener | undefined;
  if (opts.listenUrl) {
    listener = createWakeListener({
      url: opts.listenUrl,
      logger: opts.logger,
      channel: BOTS_CHANNEL,
      applicationName: 'tg-relay:bots',
    });
    listener.subscribe('*', () => void refreshLogged());
    await listener.start();
  }
  return {
    bots: () => served,
    problems: () => problems,
    onChange(fn) {
      listeners.add(fn);
      return () => listeners.delete(fn);
    },
    refresh,
    async stop() {
      await ticker.stop();
      await listener?.stop();
      await current?.catch(() => undefined);
    },
  };
}
