/**
 * The bot token lives in every Bot API URL (`/bot<token>/<method>`) and so leaks through error
 * messages, stack traces and request logs unless it is stripped. Everything that leaves the process
 * as text (logs, audit rows, API errors) goes through `redactToken`.
 */
const TOKEN_IN_TEXT = /\d{3,}:[A-Za-z0-9_-]{20,}/g;
const BOT_PATH = /\/bot[^/\s]+\//g;

export function redactToken(text: string, token?: string): string {
  let out = text;
  if (token) out = out.split(token).join('<token>');
  return out.replace(BOT_PATH, '/bot<token>/').replace(TOKEN_IN_TEXT, '<token>');
}

/**
 * Deep copy of a value with every string passed through `redactToken`. An Error becomes a plain
 * object that keeps what a copy of its own enumerable fields would lose: type, message, stack
 * (and cause), next to its own fields (code, status…).
 */
export function redactDeep<T>(value: T, token?: string, depth = 0): T {
  // the copy has the shape of the value (strings stay strings, arrays arrays, objects objects)
  return redactCopy(value, token, depth) as T;
}

function redactCopy(value: unknown, token: string | undefined, depth: number): unknown {
  if (depth > 8) return value;
  if (typeof value === 'string') return redactToken(value, token);
  if (Array.isArray(value)) return value.map((v: unknown) => redactCopy(v, token, depth + 1));
  if (value instanceof Error) {
    const out: Record<string, unknown> = {
      type: value.constructor?.name || value.name,
      message: redactToken(value.message, token),
    };
    if (value.stack) out.stack = redactToken(value.stack, token);
    for (const [k, v] of Object.entries(value)) if (!(k in out)) out[k] = redactCopy(v, token, depth + 1);
    if (value.cause !== undefined && !('cause' in out)) out.cause = redactCopy(value.cause, token, depth + 1);
    return out;
  }
  if (value && typeof value === 'object' && !(value instanceof Date)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = redactCopy(v, token, depth + 1);
    return out;
  }
  return value;
}
