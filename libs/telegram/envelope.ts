/**
 * The Bot API answer envelope (`{ok, result}` or `{ok: false, error_code, description, parameters}`),
 * read in one place, as grammY's `toGrammyError`: an HTTP answer becomes its `result` or a typed
 * error (libs/telegram/errors.ts). The client reads every answer through here, and the poller reads
 * the error envelope of a 2xx getUpdates answer through `botApiError` (it splits the updates
 * itself, to keep each update's raw bytes).
 */
import http from 'node:http';
import { TelegramApiError, TelegramNetworkError } from './errors';

/** What came back over HTTP, before anything was read from the body. */
export interface HttpAnswer {
  status: number;
  body: string;
  /** The `Retry-After` header in whole seconds, when it had that form. */
  retryAfterHeader?: number;
}

/** What the fields of an error envelope become when they are missing or not of Telegram's type. */
export interface ErrorEnvelopeRules {
  /** `error_code` when the envelope has no usable one. */
  errorCode: number;
  /** `description` when the envelope has no usable one. */
  description: string;
  /**
   * Accept an `error_code` or a `description` of any JSON primitive type ('409' is 409, 404 is
   * '404'; an `error_code` of 0 is none). Off: only a number and a string count, as Telegram sends
   * them. The poller reads a 2xx error envelope from whatever answered it leniently (a proxy, a
   * self-hosted Bot API); the client reads Telegram's fields as typed.
   */
  coerce: boolean;
}

/** The client's rules: a field the envelope lacks comes from the HTTP status ('HTTP 502 Bad Gateway'). */
export function httpStatusRules(status: number): ErrorEnvelopeRules {
  return { errorCode: status, description: `HTTP ${status} ${http.STATUS_CODES[status] ?? ''}`.trim(), coerce: false };
}

export function isSuccessStatus(status: number): boolean {
  return status >= 200 && status < 300;
}

/** The body as JSON, or why it is not JSON (a proxy's HTML page, a truncated body). */
function parseBody(body: string): { json: unknown } | { notJson: unknown } {
  try {
    return { json: JSON.parse(body) as unknown };
  } catch (err) {
    return { notJson: err };
  }
}

/** A field of the envelope: the server's data, read as unknown and narrowed by the caller. */
function field(env: unknown, key: 'ok' | 'result' | 'error_code' | 'description' | 'parameters'): unknown {
  return typeof env === 'object' && env !== null ? (env as Record<string, unknown>)[key] : undefined;
}

function errorCodeOf(value: unknown, rules: ErrorEnvelopeRules): number {
  if (rules.coerce) return Number(value) || rules.errorCode;
  return typeof value === 'number' ? value : rules.errorCode;
}

function descriptionOf(value: unknown, rules: ErrorEnvelopeRules): string {
  if (typeof value === 'string') return value;
  // a description that is not a JSON primitive (never Telegram's) is not stringified: '[object Object]' says nothing
  if (rules.coerce && (typeof value === 'number' || typeof value === 'boolean')) return String(value);
  return rules.description;
}

function errorOfEnvelope(
  method: string,
  env: unknown,
  retryAfterHeader: number | undefined,
  rules: ErrorEnvelopeRules,
): TelegramApiError {
  const p = field(env, 'parameters');
  return new TelegramApiError(method, {
    errorCode: errorCodeOf(field(env, 'error_code'), rules),
    description: descriptionOf(field(env, 'description'), rules),
    // kept as the server sent it: TelegramApiError checks the type of each field it reads
    parameters: p && typeof p === 'object' ? p : undefined,
    retryAfterHeader,
  });
}

/** The typed error of an answer that is not a success (any status, any body, JSON or not). */
export function botApiError(
  method: string,
  answer: HttpAnswer,
  rules: ErrorEnvelopeRules = httpStatusRules(answer.status),
): TelegramApiError {
  const parsed = parseBody(answer.body);
  return errorOfEnvelope(method, 'json' in parsed ? parsed.json : undefined, answer.retryAfterHeader, rules);
}

/**
 * The `result` of an answer, or throws: a non-2xx status or `ok` not true is a `TelegramApiError`;
 * a 2xx body that is not JSON is a `TelegramNetworkError` (`bad_response`: no Bot API answered).
 */
export function readBotApiAnswer(method: string, answer: HttpAnswer): unknown {
  if (!isSuccessStatus(answer.status)) throw botApiError(method, answer);
  const parsed = parseBody(answer.body);
  if ('notJson' in parsed) {
    throw new TelegramNetworkError(method, 'bad_response', `HTTP ${answer.status} answer is not JSON`, true, {
      cause: parsed.notJson,
    });
  }
  // parsed once: the error, if it is one, is read from the same envelope
  if (field(parsed.json, 'ok') !== true)
    throw errorOfEnvelope(method, parsed.json, answer.retryAfterHeader, httpStatusRules(answer.status));
  return field(parsed.json, 'result');
}
