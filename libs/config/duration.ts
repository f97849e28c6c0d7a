const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * Parses `250ms`, `5s`, `2m`, `1h`, `1.5s` or plain milliseconds (`1500`) into milliseconds.
 * Returns `undefined` for anything else so the caller can name the variable in its error.
 */
export function parseDuration(input: string): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(input);
  if (!m) return undefined;
  const value = Number(m[1]) * UNITS[m[2] ?? 'ms'];
  return Number.isFinite(value) ? Math.round(value) : undefined;
}
