/**
 * Bot API failures, split the way grammY splits them: the API answered with an error
 * (`TelegramApiError`: it has an `error_code`, a description and maybe `parameters`) versus the
 * request never produced an answer (`TelegramNetworkError`). Messages never contain the bot token
 * (it lives in the request URL): every message passes through `redactToken` before it is stored.
 */
import { redactToken } from '../observability/redact';
import { RelayError } from '../errors/relay-error';

export interface ResponseParameters {
  retry_after?: number;
  migrate_to_chat_id?: number;
}

/** The Bot API answered `ok: false` (or an HTTP error status without a usable envelope). */
export class TelegramApiError extends RelayError {
  readonly code = 'RELAY_TELEGRAM_API_ERROR';
  /** `error_code` of the envelope; the HTTP status when the body was not an envelope (proxy 502 page). */
  readonly errorCode: number;
  readonly description: string;
  readonly parameters: ResponseParameters;
  /** Seconds to wait (429): `parameters.retry_after`, else the HTTP `Retry-After` header. */
  readonly retryAfter?: number;
  readonly migrateToChatId?: number;

  constructor(
    readonly method: string,
    init: { errorCode: number; description: string; parameters?: ResponseParameters; retryAfterHeader?: number },
  ) {
    const description = redactToken(init.description);
    super(`Telegram ${method} failed: ${init.errorCode} ${description}`);
    this.errorCode = init.errorCode;
    this.description = description;
    this.parameters = init.parameters ?? {};
    const ra = this.parameters.retry_after ?? init.retryAfterHeader;
    if (typeof ra === 'number' && Number.isFinite(ra) && ra >= 0) this.retryAfter = ra;
    if (typeof this.parameters.migrate_to_chat_id === 'number')
      this.migrateToChatId = this.parameters.migrate_to_chat_id;
  }
}

/**
 * No answer: connection refused or reset, DNS failure, timeout, or the caller aborted.
 * `requestSent` is true when the whole request had been written before the failure: Telegram may
 * have acted on it (an ambiguous outcome for sends).
 */
export class TelegramNetworkError extends RelayError {
  readonly code = 'RELAY_TELEGRAM_NETWORK_ERROR';
  constructor(
    readonly method: string,
    readonly reason: 'timeout' | 'aborted' | 'connection' | 'bad_response',
    message: string,
    readonly requestSent: boolean,
    options?: { cause?: unknown },
  ) {
    super(
      `Telegram ${method}: ${redactToken(message)}`,
      options?.cause !== undefined ? { cause: scrubCause(options.cause) } : undefined,
    );
  }
}

/** Keeps the cause chain useful without carrying a token-bearing message along. */
function scrubCause(cause: unknown): unknown {
  if (!(cause instanceof Error)) return cause;
  const copy = new Error(redactToken(cause.message));
  copy.name = cause.name;
  // the code as it was (a number or a string): errorCode() would turn a number into a string
  if ('code' in cause && cause.code !== undefined) Object.assign(copy, { code: cause.code });
  return copy;
}

export function isTelegramApiError(err: unknown): err is TelegramApiError {
  return err instanceof TelegramApiError;
}

export function isTelegramNetworkError(err: unknown): err is TelegramNetworkError {
  return err instanceof TelegramNetworkError;
}
