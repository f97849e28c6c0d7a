/**
 * What PostgreSQL can hold. `text` and `jsonb` refuse U+0000 (NUL) and `jsonb` refuses unpaired
 * UTF-16 surrogates (`\ud800` without its partner), yet both are legal in a JSON string and a
 * Telegram user can send them. The `json` type keeps its input text verbatim (escapes included),
 * so tg-relay stores the exact original in a `json` column (`relay.inbox.raw`,
 * `relay.captures.payload_raw`) next to a queryable `jsonb`/`text` copy made here, where each NUL
 * and each unpaired surrogate is replaced by U+FFFD. Content is never judged: this only decides
 * how a copy is written, never whether an update is accepted.
 */

/** The replacement character written in place of what `text`/`jsonb` cannot hold. */
export const REPLACEMENT_CHAR = '\uFFFD';

/** Cheap pre-check: a NUL or any surrogate code unit (most strings have neither). */
const MAYBE_UNSTORABLE = /[\0\uD800-\uDFFF]/;
/** A NUL, a high surrogate not followed by a low one, or a low surrogate not preceded by a high one. */
const UNSTORABLE = /\0|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
/** A JSON `\u` escape that decodes to NUL or to a surrogate: only then can the parsed value hold one. */
const RISKY_ESCAPE = /\\u(?:0000|[dD][89a-fA-F])/;

/** Whether `s` holds something PostgreSQL `text` cannot store exactly. */
export function isUnstorable(s: string): boolean {
  if (!MAYBE_UNSTORABLE.test(s)) return false;
  UNSTORABLE.lastIndex = 0;
  return UNSTORABLE.test(s);
}

/** `s` with each NUL and unpaired surrogate replaced by U+FFFD (the same string when there is none). */
export function storableText(s: string): string {
  return MAYBE_UNSTORABLE.test(s) ? s.replace(UNSTORABLE, REPLACEMENT_CHAR) : s;
}

/** A deep copy of a parsed JSON value with every string and key made storable; the same value when nothing changes. */
export function storableValue(v: unknown): unknown {
  if (typeof v === 'string') return storableText(v);
  if (Array.isArray(v)) {
    let out: unknown[] | null = null;
    for (let i = 0; i < v.length; i++) {
      const c = storableValue(v[i]);
      if (c !== v[i] && !out) out = v.slice(0, i);
      if (out) out.push(c);
    }
    return out ?? v;
  }
  if (v !== null && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>);
    let changed = false;
    const copied = entries.map(([k, x]) => {
      const k2 = storableText(k);
      const x2 = storableValue(x);
      if (k2 !== k || x2 !== x) changed = true;
      return [k2, x2] as const;
    });
    // fromEntries defines own properties (a "__proto__" key stays a plain key, as JSON.parse made it)
    return changed ? Object.fromEntries(copied) : v;
  }
  return v;
}

/**
 * The text of a `jsonb` copy of `value` (parsed from `rawJson`): JSON.stringify of the storable
 * copy. `rawJson` only serves the fast path: without a `\u0000` or surrogate escape in it, no
 * string of the value can hold what jsonb refuses.
 */
export function jsonbText(value: unknown, rawJson?: string): string {
  if (rawJson !== undefined && !RISKY_ESCAPE.test(rawJson) && !MAYBE_UNSTORABLE.test(rawJson))
    return JSON.stringify(value);
  return JSON.stringify(storableValue(value));
}

/**
 * jsonbText when `stringified` is already `JSON.stringify(value)`: that very string (no second
 * stringify) unless it holds something jsonb refuses. Callers may compare the result with
 * `stringified` by identity to skip sending the same text twice.
 */
export function jsonbTextOfStringified(value: unknown, stringified: string): string {
  if (!RISKY_ESCAPE.test(stringified) && !MAYBE_UNSTORABLE.test(stringified)) return stringified;
  return JSON.stringify(storableValue(value));
}

/**
 * The raw JSON text as a `json` column can keep it. Text decoded from HTTP never holds an unpaired
 * surrogate, but a JS string handed in directly may: the driver would turn it into U+FFFD. Inside
 * a JSON string (the only place valid JSON can hold one) its `\uXXXX` escape means the same
 * character, so the stored text still parses to the exact original.
 */
export function storableJsonText(raw: string): string {
  if (!MAYBE_UNSTORABLE.test(raw)) return raw;
  return raw.replace(LONE_SURROGATE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
