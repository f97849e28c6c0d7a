/**
 * What one sendMessage attempt came to, as an explicit value, from what the Bot API client returned
 * or threw (libs/telegram: TelegramApiError = Telegram answered with an error; TelegramNetworkError =
 * no answer, with `requestSent` telling whether the whole request had been written).
 *
 * | Telegram / transport                                   | outcome                          |
 * |--------------------------------------------------------|----------------------------------|
 * | ok, result.message_id                                  | Delivered(message_id)            |
 * | 429 (parameters.retry_after, else Retry-After header)  | RateLimited(retryAfterMs)        |
 * | 400 with parameters.migrate_to_chat_id                 | Migrate(newChatId)               |
 * | 400 "message is not modified" to an edit               | Delivered (it shows that content)|
 * | 5xx, 408                                               | Retry (backoff)                  |
 * | 401, 404 (token or TELEGRAM_API_ROOT wrong)            | Config (retried, budget kept)    |
 * | 403 blocked / deactivated / kicked, 400 chat not found | Terminal(description, chatStatus)|
 * | other 4xx (400, 403, …)                                | Terminal(description)            |
 * | no answer, request not fully written (refused, DNS…)   | Retry (backoff)                  |
 * | no answer after the request was written (drop, timeout)| Ambiguous                        |
 * | 2xx without a usable result                            | Ambiguous (it may have been sent)|
 */
import { errorCode as codeOf, errorMessage, fieldOf } from '../errors';
import { TelegramApiError, TelegramNetworkError } from '../telegram/errors';
import { methodClass } from '../telegram/methods';
import { redactToken } from '../observability/redact';
import { safeText } from '../queue/errors';

/** Used when a 429 carries neither parameters.retry_after nor a Retry-After header. */
export const RATE_LIMIT_FALLBACK_MS = 1_000;
/** The shortest wait honoured after a 429 (Telegram never asks for less than a second). */
export const RATE_LIMIT_MIN_MS = 1_000;

export interface Delivered {
  type: 'delivered';
  /** The first message id of the result (none for edits, deletes, answers: `true`). */
  messageId?: number;
  /** Every message id of the result, in order (an album: one per message). */
  messageIds: number[];
  status: number;
}
/** Not a failure of the message: retry exactly after retryAfterMs, not counted against the budget. */
export interface RateLimited {
  type: 'rate_limited';
  retryAfterMs: number;
  status: number;
  description: string;
}
/** Retry with the engine's backoff (counted against the budget). */
export interface RetrySend {
  type: 'retry';
  status?: number;
  errorCode: string;
  error: string;
}
/** Telegram may or may not have sent it (the request was written, no answer came back). */
export interface Ambiguous {
  type: 'ambiguous';
  errorCode: string;
  error: string;
}
/** The group became a supergroup: send to newChatId instead. */
export interface Migrate {
  type: 'migrate';
  newChatId: string;
  status: number;
  description: string;
}
/** What a refusal says about the chat itself, recorded in relay.chat_status (its check constraint). */
export const CHAT_STATUSES = ['blocked', 'deactivated', 'kicked', 'chat_not_found'] as const;
export type ChatStatus = (typeof CHAT_STATUSES)[number];

/** Can never succeed as it is. */
export interface TerminalSend {
  type: 'terminal';
  reason: string;
  status?: number;
  errorCode: string;
  /** The chat cannot be reached at all (the user blocked the bot…): no message to it can succeed for now. */
  chatStatus?: ChatStatus;
}

/**
 * The Bot API answered as if the configuration were wrong (401: the token is not valid; 404: the
 * token or TELEGRAM_API_ROOT points nowhere), not the message: retried with backoff without spending
 * its budget, recorded in relay.config_problems for /health/ready (see libs/queue/config-problems.ts).
 */
export interface ConfigSend {
  type: 'config';
  status: number;
  errorCode: string;
  reason: string;
}

/** Bot API statuses that mean "the configuration is wrong", never "this message is wrong". */
export const SEND_CONFIG_STATUSES = new Set([401, 404]);

export type SendOutcome = Delivered | RateLimited | RetrySend | Ambiguous | Migrate | TerminalSend | ConfigSend;

const MAX_TEXT = 300;
const short = (s: string): string => {
  return safeText(redactToken(s).replace(/\s+/g, ' ').trim(), MAX_TEXT);
};

/** A query Telegram no longer takes an answer to (the user's client stopped waiting). */
export const QUERY_EXPIRED = /query is too old|query id is invalid/i;

const idOf = (v: unknown): number | undefined => {
  const id = (v as { message_id?: unknown } | null)?.message_id;
  return typeof id === 'number' && Number.isInteger(id) ? id : undefined;
};

/** The message ids of a result: Message, MessageId, an array of them, or none (`true`, a Poll…). */
export function resultMessageIds(result: unknown): number[] | undefined {
  if (Array.isArray(result)) {
    const ids = result.map(idOf);
    return ids.every((i) => i !== undefined) ? ids : undefined;
  }
  const id = idOf(result);
  return id === undefined ? undefined : [id];
}

/**
 * A successful result. Methods that create messages (send*, copy*, forward*) must answer with their
 * ids — without them the send may have happened unrecorded (Ambiguous); edits, deletes, pins,
 * reactions and answers may answer `true` or anything else.
 */
export function classifySendSuccess(result: unknown, status = 200, method = 'sendMessage'): SendOutcome {
  const ids = resultMessageIds(result);
  if (ids && ids.length > 0) return { type: 'delivered', messageId: ids[0], messageIds: ids, status };
  if (!/^(send|copy|forward)/.test(method)) return { type: 'delivered', messageIds: [], status };
  return { type: 'ambiguous', errorCode: 'BAD_RESPONSE', error: 'Telegram answered ok without a message_id' };
}

/**
 * An edit Telegram did not make because the message already shows exactly what was asked: what an
 * edit sent again after an ambiguous attempt that went through is answered (found by the poison
 * soak's edits and the differential test under SIGKILL).
 */
export const NOT_MODIFIED = /message is not modified/i;
/** A delete of a message that is not there (any more). */
export const DELETE_NOT_FOUND = /message to delete not found/i;

/**
 * A refusal that says the call's effect is already there: an edit whose content the message already
 * has, or — on a repeat, after an earlier attempt that may have been taken (a dropped connection, a
 * worker that died mid-send, a 5xx from a proxy) — a delete of a message that is gone. The user sees
 * what the handler asked for, so the row is delivered, not failed with an alert.
 */
function alreadyDone(method: string, code: number, description: string, repeat: boolean): boolean {
  if (code !== 400) return false;
  if (method.startsWith('editMessage') && NOT_MODIFIED.test(description)) return true;
  return repeat && method.startsWith('deleteMessage') && DELETE_NOT_FOUND.test(description);
}

/**
 * Telegram's descriptions of a chat the bot cannot reach (Bot API error texts: "Forbidden: bot was
 * blocked by the user", "Forbidden: user is deactivated", "Forbidden: bot was kicked from the
 * group chat" / "supergroup chat" / "channel chat", "Bad Request: chat not found").
 */
const REFUSALS: { status: ChatStatus; code: number; re: RegExp }[] = [
  { status: 'blocked', code: 403, re: /bot was blocked by the user/i },
  { status: 'deactivated', code: 403, re: /user is deactivated/i },
  { status: 'kicked', code: 403, re: /bot was kicked from/i },
  { status: 'chat_not_found', code: 400, re: /chat not found/i },
];

/**
 * The statuses that are the user's choice (blocked the bot, deleted the account, removed the bot
 * from the group): expected in any broadcast, so never alerted. "chat not found" is alerted: a chat
 * id that never talked to the bot is most often a caller's mistake an operator should see.
 */
export const UNALERTED_CHAT_STATUSES: ReadonlySet<ChatStatus> = new Set(['blocked', 'deactivated', 'kicked']);

/** The chat status a Bot API refusal states, if any. */
export function chatStatusOf(code: number, description: string): ChatStatus | undefined {
  return REFUSALS.find((c) => c.code === code && c.re.test(description))?.status;
}

/**
 * Anything a Bot API call of an outbound row threw. `repeat`: an earlier counted attempt of the row
 * was made (it may have been taken by Telegram).
 */
export function classifySendError(err: unknown, method = 'sendMessage', opts: { repeat?: boolean } = {}): SendOutcome {
  if (err instanceof TelegramApiError) {
    const code = err.errorCode;
    const description = short(err.description);
    if (alreadyDone(method, code, description, opts.repeat === true))
      return { type: 'delivered', messageIds: [], status: code };
    // an answer that came too late can never be sent: recorded, not alerted (outbound_raise_alerts)
    if (code === 400 && methodClass(method) === 'answer' && QUERY_EXPIRED.test(description))
      return { type: 'terminal', reason: description, status: code, errorCode: 'RELAY_QUERY_EXPIRED' };
    if (code === 429) {
      // Telegram's retry_after is whole seconds, at least 1; a peer answering 0 (or a fraction: a
      // proxy, a self-hosted Bot API) must not make the message retry at once, forever (429s are
      // not counted against the attempt budget)
      const ms =
        err.retryAfter !== undefined ? Math.max(RATE_LIMIT_MIN_MS, err.retryAfter * 1000) : RATE_LIMIT_FALLBACK_MS;
      return { type: 'rate_limited', retryAfterMs: ms, status: 429, description };
    }
    if (err.migrateToChatId !== undefined)
      return { type: 'migrate', newChatId: String(err.migrateToChatId), status: code, description };
    if (code >= 500 || code === 408)
      return { type: 'retry', status: code, errorCode: `HTTP_${code}`, error: description };
    if (SEND_CONFIG_STATUSES.has(code)) {
      const what =
        code === 401
          ? 'the bot token is not accepted: check TELEGRAM_BOT_TOKEN'
          : 'check TELEGRAM_BOT_TOKEN and TELEGRAM_API_ROOT';
      return {
        type: 'config',
        status: code,
        errorCode: `TELEGRAM_${code}`,
        reason: `Bot API answered ${code} to ${method} (${description}): ${what}; messages are kept and retried with backoff`,
      };
    }
    if (code >= 400) {
      const chatStatus = methodClass(method) === 'answer' ? undefined : chatStatusOf(code, description);
      return {
        type: 'terminal',
        reason: description,
        status: code,
        errorCode: `TELEGRAM_${code}`,
        ...(chatStatus ? { chatStatus } : {}),
      };
    }
    return { type: 'retry', status: code, errorCode: `HTTP_${code}`, error: description };
  }
  if (err instanceof TelegramNetworkError) {
    const causeCode = codeOf(fieldOf(err, 'cause'));
    const errorCode =
      err.reason === 'timeout'
        ? 'ETIMEDOUT'
        : err.reason === 'bad_response'
          ? 'BAD_RESPONSE'
          : err.reason === 'aborted'
            ? 'ABORTED'
            : (causeCode ?? 'ECONNECTION');
    const error = short(err.message);
    if (err.requestSent) return { type: 'ambiguous', errorCode, error: `${error} (after the request was written)` };
    return { type: 'retry', errorCode, error };
  }
  return {
    type: 'retry',
    errorCode: 'RELAY_SEND_THREW',
    error: short(errorMessage(err) ?? String(err)),
  };
}
