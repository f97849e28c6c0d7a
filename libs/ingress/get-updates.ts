/**
 * The poller's side of Telegram: one getUpdates long poll (its timeout, its abort by stop()) and
 * what came of it, and the stale-webhook check on acquiring the lease.
 *
 * Failures are described here and acted on by the loop (libs/ingress/poll-loop.ts): network, 5xx
 * and answers that are not the Bot API's (a proxy's HTML page, a truncated body) → capped
 * exponential backoff with jitter; 429 → wait retry_after; 409 → back off and re-check the lease;
 * 401/403/404 (token or API root wrong) → backoff too, shown in readiness (relay.cursor.poll_error),
 * except a 401 before the token ever worked in this process: that is a typo, thrown at once.
 */
import { errorMessage } from '../errors';
import type { Logger } from '../observability/logger';
import { BotApiClient, botApiError, ErrorEnvelopeRules, TelegramApiError, TelegramNetworkError } from '../telegram';
import type { RawAnswer } from '../telegram';
import type { GetUpdatesResult, IngressEvents } from './events';
import { scanUpdatesAnswer } from './json-scan';
import type { PollErrorKind } from './queries';

export const GET_UPDATES_LIMIT = 100;
/** Telegram clamps `timeout` to 50 s. */
const MAX_LONG_POLL_SECONDS = 50;
/** Extra time the HTTP request gets beyond the long-poll timeout before we call it lost. */
const LONG_POLL_GRACE_MS = 10_000;
/** Bot API statuses that mean the configuration (token, API root) is wrong, not the update. */
const CONFIGURATION_STATUSES = new Set([401, 403, 404]);
const WEBHOOK_CHECK_TIMEOUT_MS = 10_000;
/**
 * How a 2xx getUpdates answer whose `ok` is not true is read: it comes from whatever answered (a
 * proxy, a self-hosted Bot API), so its fields are coerced, and one without an `error_code` is a
 * server error (retried with backoff, logged as a warning).
 */
const PEER_ERROR_RULES: ErrorEnvelopeRules = { errorCode: 500, description: 'ok is not true', coerce: true };

/** The episodes a getUpdates failure opens, and the line that ends each once getUpdates works. */
export const GET_UPDATES_RECOVERIES = [
  ['telegram', 'getUpdates works again'],
  ['telegram-config', 'getUpdates accepted again (configuration fixed)'],
  ['glitch', 'getUpdates answers are Bot API answers again'],
  ['conflict', 'getUpdates conflict over: this poller receives updates again'],
  ['rate-limit', 'getUpdates no longer rate limited'],
] as const;

/** A getUpdates that brought nothing: how the loop logs it (once per episode), records it and waits. */
export interface PollFailure {
  episode: (typeof GET_UPDATES_RECOVERIES)[number][0];
  level: 'warn' | 'error';
  fields: Record<string, unknown>;
  message: string;
  /** Said in relay.cursor on an episode's first failure (readiness shows it). */
  pollError?: { kind: PollErrorKind; text: string };
  /** A wait Telegram asked for (429's retry_after); otherwise the episode's backoff. */
  waitMs?: number;
  /** 409: renew the lease before waiting; when it is gone there is nothing to wait for. */
  recheckLease?: boolean;
}

export type PollAnswer =
  /** `startedAt` (wall clock, for the trace) and `sentAt` (monotonic, to tell a held poll) of the call. */
  | { kind: 'updates'; items: string[]; status: number; startedAt: Date; sentAt: number }
  | { kind: 'failed'; failure: PollFailure }
  /** stop() interrupted the long poll. */
  | { kind: 'aborted' };

export interface GetUpdatesTransport {
  /** The `timeout` sent (0 when POLL_TIMEOUT is under a second: then getUpdates is a short poll). */
  readonly longPollSeconds: number;
  /** One getUpdates from `offset`. Throws only the 401 of a token that never worked (a typo). */
  poll(offset: number, signal: AbortSignal): Promise<PollAnswer>;
  /** Deletes a webhook left from INGRESS=webhook (pending updates kept); best effort but for that 401. */
  removeStaleWebhook(): Promise<void>;
}

export function createGetUpdatesTransport(opts: {
  api: BotApiClient;
  pollTimeoutMs: number;
  logger: Logger;
  /** Told how each getUpdates ended. */
  events: IngressEvents;
}): GetUpdatesTransport {
  const { api, logger, events } = opts;
  const longPollSeconds = Math.min(MAX_LONG_POLL_SECONDS, Math.floor(opts.pollTimeoutMs / 1000));
  /** Telegram accepted the token at least once in this process (a later 401 is then retried). */
  let tokenAccepted = false;
  const counted = (result: GetUpdatesResult) => events.emit('getUpdates', { result });
  const failedWith = (err: unknown): PollAnswer => {
    if (err instanceof TelegramNetworkError && err.reason === 'aborted') return { kind: 'aborted' }; // stop()
    counted(getUpdatesFailure(err));
    // A token that never worked in this process is a typo: say so and stop (exit 78). Once it
    // worked, a 401 (revoked? a proxy?) is retried like the rest and shown in readiness.
    if (err instanceof TelegramApiError && err.errorCode === 401 && !tokenAccepted) throw err;
    return { kind: 'failed', failure: describePollFailure(err) };
  };

  async function poll(offset: number, signal: AbortSignal): Promise<PollAnswer> {
    const startedAt = new Date();
    // elapsed time from the monotonic clock: a wall-clock step must not look like a held poll
    const sentAt = performance.now();
    let answer: RawAnswer;
    try {
      answer = await api.callApiRaw(
        'getUpdates',
        { offset, limit: GET_UPDATES_LIMIT, timeout: longPollSeconds },
        { signal, timeoutMs: longPollSeconds * 1000 + LONG_POLL_GRACE_MS },
      );
    } catch (err) {
      return failedWith(err);
    }
    const scanned = scanUpdatesAnswer(answer.body);
    if (scanned.kind === 'not_ok') return failedWith(botApiError('getUpdates', answer, PEER_ERROR_RULES));
    counted(scanned.kind === 'undecodable' ? 'not_bot_api' : scanned.items.length ? 'updates' : 'empty');
    // Never the decode policy: no update was read, nothing is confirmed, the offset stays.
    if (scanned.kind === 'undecodable')
      return { kind: 'failed', failure: notBotApiAnswer(scanned.reason, answer.body.length) };
    tokenAccepted = true;
    return { kind: 'updates', items: scanned.items, status: answer.status, startedAt, sentAt };
  }

  async function removeStaleWebhook(): Promise<void> {
    try {
      const info = await api.getWebhookInfo({ timeoutMs: WEBHOOK_CHECK_TIMEOUT_MS });
      tokenAccepted = true;
      if (info.url) {
        logger.warn('a webhook is registered for this bot but INGRESS=polling: deleting it (pending updates are kept)');
        await api.deleteWebhook({ drop_pending_updates: false }, { timeoutMs: WEBHOOK_CHECK_TIMEOUT_MS });
      }
    } catch (err) {
      if (err instanceof TelegramApiError && err.errorCode === 401 && !tokenAccepted) throw err;
      logger.warn({ err }, 'could not check for a registered webhook; continuing');
    }
  }

  return { longPollSeconds, poll, removeStaleWebhook };
}

/** How the loop reacts to a getUpdates that threw or answered an error envelope. */
export function describePollFailure(err: unknown): PollFailure {
  if (!(err instanceof TelegramApiError)) {
    const kind = err instanceof TelegramNetworkError ? err.reason : 'error';
    const why = `${kind}: ${errorMessage(err) ?? String(err)}`;
    return {
      episode: 'telegram',
      level: 'warn',
      fields: { err },
      message: 'getUpdates failed; retrying the same offset',
      pollError: { kind: 'transport', text: `getUpdates failed (${why}); retrying with backoff` },
    };
  }
  const { errorCode, description } = err;
  if (CONFIGURATION_STATUSES.has(errorCode)) {
    const what =
      errorCode === 401
        ? 'the bot token was rejected: check TELEGRAM_BOT_TOKEN'
        : 'check TELEGRAM_BOT_TOKEN and TELEGRAM_API_ROOT';
    const reason = `getUpdates answered ${errorCode} (${description}): ${what}; retrying with backoff`;
    const fields = { errorCode, description };
    return {
      episode: 'telegram-config',
      level: 'error',
      fields,
      message: reason,
      pollError: { kind: 'configuration', text: reason },
    };
  }
  if (errorCode === 409) {
    const message =
      "getUpdates conflict: another poller or a webhook is taking this bot's updates; " +
      'backing off and re-checking the lease';
    return { episode: 'conflict', level: 'warn', fields: { description }, message, recheckLease: true };
  }
  if (errorCode === 429) {
    const message = 'getUpdates rate limited: waiting retry_after';
    const waitMs = Math.max(1, err.retryAfter ?? 1) * 1000;
    return { episode: 'rate-limit', level: 'warn', fields: { retryAfterS: err.retryAfter }, message, waitMs };
  }
  return {
    episode: 'telegram',
    level: errorCode >= 500 ? 'warn' : 'error',
    fields: { errorCode, description },
    message: 'getUpdates failed; retrying the same offset',
    pollError: { kind: 'transport', text: `getUpdates answered ${errorCode} (${description}); retrying with backoff` },
  };
}

/** A 2xx answer that is not a Bot API answer (HTML from a proxy, a truncated body): a transport glitch. */
function notBotApiAnswer(reason: string, bytes: number): PollFailure {
  const message = `getUpdates answer is not a Bot API answer (${reason}); retrying the same offset with backoff`;
  return {
    episode: 'glitch',
    level: 'warn',
    fields: { reason, bytes },
    message,
    pollError: { kind: 'transport', text: message },
  };
}

/** The getUpdates result label of a failed call (METRICS_PORT). */
function getUpdatesFailure(err: unknown): GetUpdatesResult {
  if (err instanceof TelegramApiError)
    return err.errorCode === 409 ? 'conflict' : err.errorCode === 429 ? 'rate_limited' : 'api_error';
  return 'network_error';
}
