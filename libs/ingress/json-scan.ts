/**
 * Splits a getUpdates answer into the raw text of each update without trusting the whole body to
 * be valid JSON. A single malformed update must not hide its neighbours (the decode policy acts per
 * update), and quarantine keeps each update's exact bytes. The scanner only tracks strings and
 * bracket depth; each element is parsed separately afterwards.
 */

export type ScannedAnswer =
  | { kind: 'updates'; items: string[] }
  /** `ok` is not `true`: an error envelope in a 2xx answer. */
  | { kind: 'not_ok'; body: string }
  | { kind: 'undecodable'; reason: string };

const WS = new Set([0x20, 0x09, 0x0a, 0x0d]);

function skipWs(s: string, i: number): number {
  while (i < s.length && WS.has(s.charCodeAt(i))) i++;
  return i;
}

/** Index just after the closing quote of the string starting at `i`, or -1. */
function skipString(s: string, i: number): number {
  for (let j = i + 1; j < s.length; j++) {
    const c = s.charCodeAt(j);
    if (c === 0x5c)
      j++; // backslash: skip the escaped char
    else if (c === 0x22) return j + 1;
  }
  return -1;
}

/**
 * From `i`, the index of the first `,` or closing bracket at depth 0 (not consumed), or -1 when the
 * text ends first or brackets do not balance.
 */
function scanToDelimiter(s: string, i: number): number {
  let depth = 0;
  for (let j = i; j < s.length; j++) {
    const c = s.charCodeAt(j);
    if (c === 0x22) {
      const k = skipString(s, j);
      if (k < 0) return -1;
      j = k - 1;
    } else if (c === 0x7b || c === 0x5b) depth++;
    else if (c === 0x7d || c === 0x5d) {
      if (depth === 0) return j;
      depth--;
    } else if (c === 0x2c && depth === 0) return j;
  }
  return -1;
}

/** Raw elements of the array whose `[` is at `i`, and the index after its `]`. */
function splitArray(s: string, i: number): { items: string[]; end: number } | null {
  const items: string[] = [];
  let j = skipWs(s, i + 1);
  if (s.charCodeAt(j) === 0x5d) return { items, end: j + 1 };
  for (;;) {
    const d = scanToDelimiter(s, j);
    if (d < 0) return null;
    items.push(s.slice(j, d).trim());
    if (s.charCodeAt(d) === 0x5d) return { items, end: d + 1 };
    if (s.charCodeAt(d) !== 0x2c) return null; // a '}' closing nothing
    j = skipWs(s, d + 1);
  }
}

/** Scans `{"ok":true,"result":[…]}` (keys in any order, extra keys ignored). */
export function scanUpdatesAnswer(body: string): ScannedAnswer {
  let i = skipWs(body, 0);
  if (body.charCodeAt(i) !== 0x7b) return { kind: 'undecodable', reason: 'answer is not a JSON object' };
  i = skipWs(body, i + 1);
  let okText: string | undefined;
  let items: string[] | undefined;
  if (body.charCodeAt(i) === 0x7d) return { kind: 'not_ok', body };
  for (;;) {
    if (body.charCodeAt(i) !== 0x22) return { kind: 'undecodable', reason: 'malformed answer envelope' };
    const keyEnd = skipString(body, i);
    if (keyEnd < 0) return { kind: 'undecodable', reason: 'malformed answer envelope' };
    let key: string;
    try {
      key = JSON.parse(body.slice(i, keyEnd)) as string;
    } catch {
      return { kind: 'undecodable', reason: 'malformed answer envelope' };
    }
    i = skipWs(body, keyEnd);
    if (body.charCodeAt(i) !== 0x3a) return { kind: 'undecodable', reason: 'malformed answer envelope' };
    i = skipWs(body, i + 1);
    if (key === 'result' && body.charCodeAt(i) === 0x5b) {
      const arr = splitArray(body, i);
      if (!arr) return { kind: 'undecodable', reason: 'the result array could not be split into updates' };
      items = arr.items;
      i = skipWs(body, arr.end);
    } else {
      const d = scanToDelimiter(body, i);
      if (d < 0) return { kind: 'undecodable', reason: 'malformed answer envelope' };
      if (key === 'ok') okText = body.slice(i, d).trim();
      i = d;
    }
    const c = body.charCodeAt(i);
    if (c === 0x7d) break;
    if (c !== 0x2c) return { kind: 'undecodable', reason: 'malformed answer envelope' };
    i = skipWs(body, i + 1);
  }
  if (okText !== 'true') return { kind: 'not_ok', body };
  if (!items) return { kind: 'undecodable', reason: 'answer has no result array' };
  return { kind: 'updates', items };
}
