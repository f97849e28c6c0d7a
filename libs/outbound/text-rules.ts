/**
 * Text rules shared by every outbound way in and the reply seam: characters as PostgreSQL counts
 * them, what jsonb and Telegram cannot take (NUL, lone surrogates), a message text Telegram accepts.
 */
import { TELEGRAM_TEXT_MAX } from '../telegram/limits';

export const OUTBOUND_TEXT_MAX = TELEGRAM_TEXT_MAX;

/** Characters as PostgreSQL's char_length counts them (code points), so both checks agree. */
export function charLength(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/** NUL (PostgreSQL text/jsonb cannot hold it) or a lone surrogate (not Unicode: half an emoji cut by `slice`). */
export function unicodeProblem(s: string): string | undefined {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0) return `contains a NUL character (U+0000) at index ${i}`;
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = s.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        i++;
        continue;
      }
      return `contains a lone surrogate (U+${c.toString(16).toUpperCase()}) at index ${i}: not valid Unicode (an emoji cut in half?)`;
    }
    if (c >= 0xdc00 && c <= 0xdfff)
      return `contains a lone surrogate (U+${c.toString(16).toUpperCase()}) at index ${i}: not valid Unicode (an emoji cut in half?)`;
  }
  return undefined;
}

/**
 * Why `text` cannot be a Telegram message text (1..4096 characters, a visible one among them,
 * valid Unicode without NUL), or undefined when it can. Reusable by every way in (admin API,
 * library, handler replies); never quotes the text.
 */
export function outboundTextProblem(text: unknown): string | undefined {
  if (typeof text !== 'string') return `must be a string of 1..${OUTBOUND_TEXT_MAX} characters`;
  const n = charLength(text);
  if (n < 1 || n > OUTBOUND_TEXT_MAX) return `must be 1..${OUTBOUND_TEXT_MAX} characters, got ${n}`;
  const u = unicodeProblem(text);
  if (u) return u;
  if (!/\S/.test(text)) return 'must contain a visible character (Telegram rejects blank text)';
  return undefined;
}

/**
 * Why a value cannot be stored as `jsonb` and sent as JSON (a NUL or lone surrogate in a string or
 * key, a BigInt, a cycle), or undefined when it can.
 */
export function jsonValueProblem(value: unknown): string | undefined {
  const seen = new Set<unknown>();
  const walk = (v: unknown, path: string, depth: number): string | undefined => {
    if (typeof v === 'string') {
      const u = unicodeProblem(v);
      return u ? `${path || 'value'} ${u}` : undefined;
    }
    if (typeof v === 'bigint') return `${path || 'value'} is a BigInt (not JSON)`;
    if (v === null || typeof v !== 'object') return undefined;
    if (seen.has(v)) return `${path || 'value'} is circular (not JSON)`;
    if (depth > 32) return `${path || 'value'} is nested too deeply`;
    seen.add(v);
    if (typeof (v as { toJSON?: unknown }).toJSON === 'function' && !(v instanceof Date)) {
      try {
        return walk((v as { toJSON: () => unknown }).toJSON(), path, depth + 1);
      } catch {
        return `${path || 'value'} cannot be converted to JSON`;
      }
    }
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
      const ku = unicodeProblem(k);
      if (ku) return `a key of ${path || 'value'} ${ku}`;
      const p = walk(x, path ? `${path}.${k.slice(0, 40)}` : k.slice(0, 40), depth + 1);
      if (p) return p;
    }
    seen.delete(v);
    return undefined;
  };
  return walk(value, '', 0);
}
