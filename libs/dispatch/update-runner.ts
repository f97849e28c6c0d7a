/**
 * Runs stored updates through the bot's telegraf handlers and turns what happened into an explicit
 * outcome (`Handled | Retry`). One `Telegraf` per bot, built once: `webhookReply` off, `botInfo`
 * fetched once at start (never per update), `launch()` never called.
 */
import { performance } from 'node:perf_hooks';
import type { Pool, PoolClient } from 'pg';
import type { Update, UserFromGetMe } from 'telegraf/types';
import { sleep } from '../lifecycle/timers';
import type { Logger } from '../observability/logger';
import { runAttempt } from './attempt';
import { AttemptWork } from './attempt-work';
import { SessionValueError } from './session-errors';
import type { PrefetchedSession } from './session-queries';
import { SESSION_TTL_MS_DEFAULT } from './session-store';
import { createDispatchBot } from './dispatch-bot';
import { DispatchAbortedError, fromTelegraf, InvalidReplyError, TelegrafRefusedError } from './errors';
import type { BotHandlers, DispatchBot } from './handlers-module';
import { errorInfo, type DispatchOutcome, type Retry } from './outcome';
import type { ReplySink } from './reply-sink';
import { chatIdOf } from './update-chat';

export const HANDLER_TIMEOUT_MS_DEFAULT = 20_000;

export interface UpdateRunnerOptions {
  token: string;
  /** Bot id as stored in relay.inbox.bot_id (the numeric prefix of the token). */
  botId: string;
  /** TELEGRAM_API_ROOT. */
  apiRoot: string;
  handlers: BotHandlers;
  replySink: ReplySink;
  logger: Logger;
  /** Known bot identity (skips getMe at start; tests and callers that cached it). */
  botInfo?: UserFromGetMe;
  /** Delay between getMe attempts at start while the Bot API is unreachable. */
  getMeRetryMs?: number;
  /**
   * The worker's pool: sessions (`dispatch.sessionStore()`) and the handler's own transaction
   * (`dispatch.transaction(ctx)`) use it. Without it both are refused.
   */
  pool?: Pool;
  /** SESSION_TTL (default 30 days). */
  sessionTtlMs?: number;
}

export interface RunOptions {
  /** Aborts the attempt from outside (shutdown, lost claim): the outcome is Retry (aborted). */
  signal?: AbortSignal;
  /** HANDLER_TIMEOUT: past it the handler's signal fires and the outcome is Retry (timed out). */
  timeoutMs?: number;
  /** relay.inbox.update_epoch: above 0 for an update stored under an update_id Telegram reused. */
  updateEpoch?: number;
  /** The update's session as its claim read it (relay.inbox rows): spares the handler's session() a read. */
  session?: PrefetchedSession;
}

export interface UpdateRunner {
  readonly bot: DispatchBot;
  readonly botId: string;
  /** Installs the handlers module on the bot (once). Throws what the register function throws. */
  install(): Promise<void>;
  /** `install()`, then getMe (once; retried until it answers or `signal` aborts). Updates run only after this. */
  start(opts?: { signal?: AbortSignal }): Promise<UserFromGetMe>;
  /** Set once started: the bot's identity. */
  botInfo(): UserFromGetMe | undefined;
  /** Runs one raw update (as stored) through the handlers; never throws. */
  runUpdate(raw: unknown, opts?: RunOptions): Promise<DispatchOutcome>;
}

export { normalizeApiRoot } from './dispatch-bot';
export { chatIdOf } from './update-chat';

/** Start-up waits for the Bot API: linear growth to a cap (a fixed service, not a crowd reconnecting). */
const GET_ME_RETRY_MS_DEFAULT = 2_000;
const GET_ME_RETRY_CAP_MS = 30_000;

export function createUpdateRunner(opts: UpdateRunnerOptions): UpdateRunner {
  const logger = opts.logger;
  const sessionTtlMs = opts.sessionTtlMs ?? SESSION_TTL_MS_DEFAULT;
  const { bot, api } = createDispatchBot(opts.token, opts.apiRoot, {
    pool: opts.pool,
    botId: opts.botId,
    sessionTtlMs,
  });

  let installing: Promise<void> | undefined;
  let starting: Promise<UserFromGetMe> | undefined;

  function install(): Promise<void> {
    installing ??= opts.handlers.install(bot, api);
    return installing;
  }

  async function fetchBotInfo(signal?: AbortSignal): Promise<UserFromGetMe> {
    const retryMs = opts.getMeRetryMs ?? GET_ME_RETRY_MS_DEFAULT;
    for (let attempt = 1; ; attempt++) {
      if (signal?.aborted) throw new DispatchAbortedError(signal.reason);
      try {
        return await bot.telegram.getMe();
      } catch (err) {
        logger.warn({ err: errorInfo(err), attempt }, 'getMe failed; dispatch waits for the Bot API');
        await sleep(Math.min(retryMs * attempt, GET_ME_RETRY_CAP_MS), signal, { unref: true });
      }
    }
  }

  function start(o: { signal?: AbortSignal } = {}): Promise<UserFromGetMe> {
    starting ??= (async () => {
      await install();
      const info = opts.botInfo ?? (await fetchBotInfo(o.signal));
      bot.botInfo = info;
      logger.info(
        { username: info.username, handlers: opts.handlers.shape, replyMode: opts.replySink.mode },
        'bot handlers ready',
      );
      return info;
    })();
    starting.catch(() => {
      starting = undefined; // a failed start (aborted getMe) can be retried
    });
    return starting;
  }

  async function runUpdate(raw: unknown, o: RunOptions = {}): Promise<DispatchOutcome> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const retry = (thrown: unknown, extra: Partial<Retry> = {}): Retry => retryOutcome(thrown, elapsed(), extra);
    if (!bot.botInfo) {
      if (!starting) return retry(new Error('dispatch is not started: call start() first'));
      try {
        await starting;
      } catch (err) {
        return retry(err);
      }
    }
    if (!raw || typeof raw !== 'object' || !Number.isInteger((raw as { update_id?: unknown }).update_id)) {
      return retry(new TypeError('stored update has no integer update_id'));
    }
    const update = raw as Update;
    if (o.signal?.aborted) return retry(new DispatchAbortedError(o.signal.reason), { aborted: true });

    const session = opts.replySink.open({
      botId: opts.botId,
      updateId: update.update_id,
      updateEpoch: o.updateEpoch,
      chatId: chatIdOf(update),
    });
    const work = new AttemptWork({ pool: opts.pool, botId: opts.botId, sessionTtlMs, prefetched: o.session });
    const result = await runAttempt(bot, update, session, o, work);
    if (!result.ok) {
      work.discard();
      return retry(result.error, {
        timedOut: result.timedOut,
        aborted: result.aborted,
        ...(result.originalError !== undefined ? { originalError: errorInfo(result.originalError) } : {}),
      });
    }
    const transaction = await work.handOver();
    const commit = async (c: PoolClient) => {
      await session.commit(c);
      await work.commit(c);
    };
    const handled = {
      kind: 'handled',
      durationMs: elapsed(),
      commit,
      parts: { replies: (c: PoolClient) => session.commit(c), sessions: work.sessionsIfUsed },
      ...(transaction ? { transaction } : {}),
    } as const;
    if (result.handledError !== undefined)
      return { ...handled, via: 'error_handler', handledError: errorInfo(result.handledError) };
    return { ...handled, via: 'handler' };
  }

  return { bot, botId: opts.botId, install, start, botInfo: () => bot.botInfo, runUpdate };
}

/**
 * A failed attempt; what telegraf itself refused, a reply we refused and a session value that is
 * not JSON cannot succeed on retry.
 */
function retryOutcome(thrown: unknown, durationMs: number, extra: Partial<Retry>): Retry {
  const error = fromTelegraf(thrown);
  const deterministic =
    error instanceof InvalidReplyError || error instanceof TelegrafRefusedError || error instanceof SessionValueError;
  return {
    kind: 'retry',
    error,
    info: errorInfo(error),
    timedOut: false,
    aborted: false,
    durationMs,
    ...(deterministic ? { terminal: true } : {}),
    ...extra,
  };
}
