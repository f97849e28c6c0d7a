/**
 * What a broadcast will take and cost, stated before it starts. Telegram's paid broadcasts
 * (allow_paid_broadcast) charge 0.1 Stars for each message sent beyond the free 30 per second; the
 * rate a bot may use and whether it is eligible are Telegram's to say (they change), so the plan
 * takes the rate the operator configured (PAID_BROADCAST_RATE) and never judges eligibility.
 */

/** Telegram's free bulk rate, messages per second: what is sent above it is paid. */
export const FREE_BROADCAST_RATE = 30;
/** Stars per paid message. */
export const PAID_MESSAGE_STARS = 0.1;

export interface BroadcastPlan {
  recipients: number;
  skipped: number;
  /** Messages the broadcast sends (an album counts its messages). */
  messages: number;
  paid: boolean;
  /** The bulk rate it is planned at, messages per second. */
  rate_per_second: number;
  estimated_seconds: number;
  /** Messages above the free rate (0 unless paid). */
  paid_messages: number;
  cost_stars: number;
}

/**
 * `freeRate`: the bot's configured bulk rate (OUTBOUND_RATE_PER_BOT, per second); `paidRate`: the
 * PAID_BROADCAST_RATE when the broadcast is paid, else null.
 */
export function planBroadcast(a: {
  recipients: number;
  skipped: number;
  messageCount: number;
  freeRate: number;
  paidRate: number | null;
}): BroadcastPlan {
  const messages = a.recipients * a.messageCount;
  const paid = a.paidRate !== null;
  const rate = paid ? Math.max(a.paidRate as number, a.freeRate) : a.freeRate;
  const seconds = rate > 0 ? messages / rate : 0;
  // sent at `rate` for `seconds`, the first FREE_BROADCAST_RATE of each second are free
  const paidMessages = paid ? Math.max(0, Math.ceil(messages - Math.min(rate, FREE_BROADCAST_RATE) * seconds)) : 0;
  return {
    recipients: a.recipients,
    skipped: a.skipped,
    messages,
    paid,
    rate_per_second: rate,
    estimated_seconds: Math.ceil(seconds),
    paid_messages: paidMessages,
    cost_stars: Math.round(paidMessages * PAID_MESSAGE_STARS * 10) / 10,
  };
}
