import type { PoolClient } from 'pg';
import type { AttemptTransaction } from '../queue/attempt-transaction';
import type { AttemptSessions } from './attempt-sessions';
import { redactToken } from '../observability/redact';
import { safeText } from '../queue/errors';

/** What an error looks like in the audit and in `inbox.last_error`: class, code and message only. */
export interface ErrorInfo {
  /** Constructor name (`TypeError`, `TelegramError`, `HandlerTimeoutError`, your own class). */
  errorClass: string;
  /** `err.code` when it has one (a string code, or Telegram's numeric error_code as text). */
  code?: string;
  /** The message, token-redacted and cut to MAX_ERROR_MESSAGE characters. */
  message: string;
}

export const MAX_ERROR_MESSAGE = 500;

/** Reduces anything thrown to an `ErrorInfo`. Never includes payloads (TelegramError.on holds reply text). */
export function errorInfo(err: unknown): ErrorInfo {
  if (err instanceof Error) {
    const ctorName = (err.constructor as { name?: string } | undefined)?.name;
    const errorClass = ctorName && ctorName !== 'Error' ? ctorName : err.name || 'Error';
    const rawCode: unknown = 'code' in err ? err.code : undefined;
    const code = typeof rawCode === 'string' || typeof rawCode === 'number' ? String(rawCode) : undefined;
    return {
      errorClass: cut(errorClass),
      ...(code ? { code: cut(code) } : {}),
      message: cut(redactToken(String(err.message || err.name || 'Error'))),
    };
  }
  let text: string;
  try {
    text = String(err);
  } catch {
    text = '[a thrown value that cannot be printed]';
  }
  return { errorClass: typeof err, message: cut(redactToken(text)) };
}

/** Cut on code-point boundaries, NUL and lone surrogates replaced: stored text never fails its write. */
function cut(s: string): string {
  return safeText(s, MAX_ERROR_MESSAGE);
}

/**
 * The update reached an acknowledged outcome: a handler finished (or no route matched, or a
 * middleware deliberately stopped), or an error handler returned 'handled'. `commit` must run
 * inside the transaction that marks the inbox row handled (outbound reply mode writes the captured
 * replies there; direct mode does nothing).
 */
export interface Handled {
  kind: 'handled';
  /** 'handler': the middleware chain completed; 'error_handler': an error handler accepted the error. */
  via: 'handler' | 'error_handler';
  /** The error an error handler accepted (via === 'error_handler'). */
  handledError?: ErrorInfo;
  durationMs: number;
  commit: (client: PoolClient) => Promise<void>;
  /**
   * `commit` in its two parts, for the outcome transaction of many attempts: the captured replies
   * (per attempt) and the sessions the attempt wrote, applied for the whole batch in one statement
   * (commitSessions). `commit` is both, for one attempt alone.
   */
  parts: { replies: (client: PoolClient) => Promise<readonly string[]>; sessions?: AttemptSessions };
  /** The handler's own transaction (`dispatch.transaction(ctx)`), for the outcome to commit on. */
  transaction?: AttemptTransaction;
}

/** The update is not handled: retry it with backoff (or fail it when the budget is spent). */
export interface Retry {
  kind: 'retry';
  error: unknown;
  info: ErrorInfo;
  /** HANDLER_TIMEOUT fired. */
  timedOut: boolean;
  /** The dispatch was aborted from outside (shutdown, lost claim), not failed by the handler. */
  aborted: boolean;
  /** When an error handler threw: the error it was asked to recover from. */
  originalError?: ErrorInfo;
  /**
   * No retry can change the result (an invalid reply, telegraf refusing the update): the update
   * fails at once with the error as its reason.
   */
  terminal?: boolean;
  durationMs: number;
}

export type DispatchOutcome = Handled | Retry;
