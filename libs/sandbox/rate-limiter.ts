/**
 * Telegram-like flood control for sendMessage.
 *
 * Each bucket is a GCRA (generic cell rate algorithm, i.e. a token bucket expressed in time):
 *   emission interval T = windowMs / count, tolerance tau = (burst - 1) * T + toleranceMs.
 *   A send at time `now` conforms when now >= TAT - tau; it then moves TAT to max(TAT, now) + T.
 * With burst = count (the default) every sequence that has at most `count` sends in any window of
 * `windowMs` conforms, and so does a client that spaces sends evenly by T: a correctly paced client
 * (evenly spaced, or "N per window" with a sliding window) gets zero 429s, even with `toleranceMs`
 * of arrival jitter. A non-conforming send is answered 429 and consumes nothing, so a client that
 * waits `retry_after` seconds and retries is accepted.
 *
 * Buckets: per bot (default 30/s), per private chat (chat_id > 0, default 1/s, burst 1), per group
 * or channel (chat_id < 0 or @username, default 20/min). A send must conform to the bot bucket and
 * its chat bucket; retry_after is the larger wait, rounded up to whole seconds (at least 1).
 * With `paidBroadcast` set, a send with allow_paid_broadcast is paced by that bucket (bot-wide)
 * instead of the per-bot one; its chat bucket applies as to any send.
 */
import type { BucketLimit, RateLimitConfig } from './types';

export const DEFAULT_RATE_LIMITS: RateLimitConfig = {
  enabled: true,
  perBot: { count: 30, windowMs: 1000, burst: 30 },
  privateChat: { count: 1, windowMs: 1000, burst: 1 },
  groupChat: { count: 20, windowMs: 60_000, burst: 20 },
  toleranceMs: 100,
};

export type RateLimitsInput = Partial<
  Omit<RateLimitConfig, 'perBot' | 'privateChat' | 'groupChat' | 'paidBroadcast'>
> & {
  perBot?: Partial<BucketLimit>;
  privateChat?: Partial<BucketLimit>;
  groupChat?: Partial<BucketLimit>;
  /** null turns paid broadcasts off again. */
  paidBroadcast?: BucketLimit | null;
};

export function mergeRateLimits(base: RateLimitConfig, patch: RateLimitsInput | undefined): RateLimitConfig {
  if (!patch) return cloneLimits(base);
  const paid =
    patch.paidBroadcast === null
      ? undefined
      : patch.paidBroadcast !== undefined
        ? mergeBucket({ count: patch.paidBroadcast.count, windowMs: patch.paidBroadcast.windowMs }, patch.paidBroadcast)
        : base.paidBroadcast && { ...base.paidBroadcast };
  return {
    enabled: patch.enabled ?? base.enabled,
    toleranceMs: patch.toleranceMs ?? base.toleranceMs,
    perBot: mergeBucket(base.perBot, patch.perBot),
    privateChat: mergeBucket(base.privateChat, patch.privateChat),
    groupChat: mergeBucket(base.groupChat, patch.groupChat),
    ...(paid ? { paidBroadcast: paid } : {}),
  };
}

function mergeBucket(base: BucketLimit, patch: Partial<BucketLimit> | undefined): BucketLimit {
  const count = patch?.count ?? base.count;
  const windowMs = patch?.windowMs ?? base.windowMs;
  // A new count without a new burst means "count per window": burst follows count.
  const burst = patch?.burst ?? (patch?.count !== undefined ? count : (base.burst ?? count));
  if (!(count > 0) || !(windowMs > 0) || !(burst >= 1)) {
    throw new Error(`invalid rate limit bucket: count=${count} windowMs=${windowMs} burst=${burst}`);
  }
  return { count, windowMs, burst };
}

function cloneLimits(l: RateLimitConfig): RateLimitConfig {
  const c = { ...l, perBot: { ...l.perBot }, privateChat: { ...l.privateChat }, groupChat: { ...l.groupChat } };
  if (l.paidBroadcast) c.paidBroadcast = { ...l.paidBroadcast };
  return c;
}

export class RateLimiter {
  /** Theoretical arrival time per bucket key. */
  private readonly tat = new Map<string, number>();

  constructor(private config: RateLimitConfig) {}

  get limits(): RateLimitConfig {
    return cloneLimits(this.config);
  }

  setLimits(config: RateLimitConfig): void {
    this.config = config;
    this.tat.clear();
  }

  reset(): void {
    this.tat.clear();
  }

  /**
   * Try to take one send for (bot, chat). Returns 0 when accepted (and charged), otherwise the
   * retry_after in whole seconds (nothing charged). `paid`: the send carries allow_paid_broadcast.
   */
  take(botId: number, chat: number | string, now = Date.now(), paid = false): number {
    if (!this.config.enabled) return 0;
    const isPrivate = typeof chat === 'number' && chat > 0;
    const paidBucket = paid ? this.config.paidBroadcast : undefined;
    const buckets: Array<[string, BucketLimit]> = [
      paidBucket ? [`paid:${botId}`, paidBucket] : [`bot:${botId}`, this.config.perBot],
      [`chat:${botId}:${chat}`, isPrivate ? this.config.privateChat : this.config.groupChat],
    ];
    let waitMs = 0;
    for (const [key, limit] of buckets) {
      const { tau } = this.params(limit);
      const earliest = (this.tat.get(key) ?? now) - tau;
      if (now < earliest) waitMs = Math.max(waitMs, earliest - now);
    }
    if (waitMs > 0) return Math.max(1, Math.ceil(waitMs / 1000));
    if (this.tat.size > 100_000) this.prune(now);
    for (const [key, limit] of buckets) {
      const { interval } = this.params(limit);
      const tat = this.tat.get(key) ?? now;
      this.tat.set(key, Math.max(tat, now) + interval);
    }
    return 0;
  }

  /** A TAT in the past is the same as no entry: drop those to bound memory. */
  private prune(now: number): void {
    for (const [key, tat] of this.tat) if (tat <= now) this.tat.delete(key);
  }

  private params(limit: BucketLimit): { interval: number; tau: number } {
    const interval = limit.windowMs / limit.count;
    const burst = limit.burst ?? limit.count;
    return { interval, tau: (burst - 1) * interval + this.config.toleranceMs };
  }
}
