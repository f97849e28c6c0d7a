/** An error of the worker engine with a stable code. */
import { RelayError } from '../errors/relay-error';
import { errorMessage } from '../errors/thrown';
export class QueueError extends RelayError {
  constructor(
    readonly code: 'RELAY_QUEUE_NOT_MIGRATED' | 'RELAY_QUEUE_STOPPED' | 'RELAY_HANDLER_THREW' | 'RELAY_CLAIM_LOST',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** A short, single-line description of any thrown value, for logs-free audit columns. */
export function shortError(err: unknown, max = 300): string {
  const msg = errorMessage(err) ?? String(err);
  return safeText(msg.replace(/\s+/g, ' ').trim(), max);
}

const REPLACEMENT = '\uFFFD';

/**
 * Text that PostgreSQL `text` and `jsonb` can always hold, for error strings written to the audit,
 * `last_error`, `failed_reason` and ledger job output: NUL and lone surrogates (a `slice` that cut an
 * emoji in half) become U+FFFD, and the text is cut to `max` code points (never inside a surrogate
 * pair), ending with `…` when cut. Content of an error is data: it must never make its write fail.
 */
export function safeText(value: string, max = 500): string {
  let total = 0;
  let clean = true;
  for (const ch of value) {
    const cp = ch.codePointAt(0) as number;
    if (cp === 0 || (cp >= 0xd800 && cp <= 0xdfff)) clean = false;
    total++;
  }
  if (clean && total <= max) return value;
  const keep = total <= max ? total : Math.max(0, max - 1);
  let out = '';
  let n = 0;
  for (const ch of value) {
    if (n === keep) break;
    const cp = ch.codePointAt(0) as number;
    out += cp === 0 || (cp >= 0xd800 && cp <= 0xdfff) ? REPLACEMENT : ch;
    n++;
  }
  return total <= max ? out : `${out}…`;
}

/** `safeText` applied to every string (and key) of a JSON-like value, for `jsonb` columns. */
export function safeJson<T>(value: T, maxString = 2_000, depth = 0): T {
  if (typeof value === 'string') return safeText(value, maxString) as T;
  if (value === null || typeof value !== 'object' || depth > 20) return value;
  if (value instanceof Date) return value;
  if (Array.isArray(value)) return value.map((v: unknown) => safeJson(v, maxString, depth + 1)) as T;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>))
    out[safeText(k, 200)] = safeJson(v, maxString, depth + 1);
  return out as T;
}
