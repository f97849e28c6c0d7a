import { z } from 'zod';

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * A retention period: `14d`, `36h`, `90m`, `30s` (days allowed, unlike other durations), or `0` /
 * `off` to disable the class (null: kept for good). Undefined for anything else.
 */
export function parseRetention(input: string): number | null | undefined {
  const v = input.trim().toLowerCase();
  if (v === '0' || v === 'off') return null;
  const m = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/.exec(v);
  if (!m) return undefined;
  const ms = Math.round(Number(m[1]) * UNITS[m[2]]);
  return Number.isFinite(ms) && ms > 0 ? ms : undefined;
}

/** Config schema entry for RETENTION / RETENTION_FAILED: milliseconds, or null when off. */
export const retention = (what: string, min = 60_000) =>
  z.string().transform((v, ctx) => {
    const ms = parseRetention(v);
    if (ms === undefined || (ms !== null && ms < min)) {
      ctx.addIssue({
        code: z.ZodIssueCode.custom,
        message: `expected ${what} as a period of at least ${min / 1000}s like 14d, 36h or 90m, or 0/off to keep for good, got "${v}"`,
      });
      return z.NEVER;
    }
    return ms;
  });

/** SESSION_TTL: from 1 minute to 10 years. */
export const SESSION_TTL_MIN_MS = 60_000;
export const SESSION_TTL_MAX_MS = 3650 * 86_400_000;

/** SESSION_TTL: how long a handler session lives after its last write, `30d`, `12h`, `90m`. */
export const sessionTtl = z.string().transform((v, ctx) => {
  const ms = parseRetention(v);
  if (ms === undefined || ms === null || ms < SESSION_TTL_MIN_MS || ms > SESSION_TTL_MAX_MS) {
    ctx.addIssue({
      code: z.ZodIssueCode.custom,
      message: `expected how long a session lives after its last write, from 1m to 3650d like 30d, 12h or 90m, got "${v}"`,
    });
    return z.NEVER;
  }
  return ms;
});

/** PRUNE_EVERY: how often a worker prunes, `10m`; `0`/`off` turns periodic pruning off. 1 s to 1 day. */
export const pruneEvery = z.string().transform((v, ctx) => {
  const ms = parseRetention(v);
  if (ms === undefined || (ms !== null && (ms < 1000 || ms > 86_400_000))) {
    ctx.addIssue({
      code: z.ZodIssueCode.custom,
      message: `expected the prune period from 1s to 1d like 10m, or 0/off for no periodic pruning, got "${v}"`,
    });
    return z.NEVER;
  }
  return ms;
});
