/**
 * The outbound.send kind as `tg-relay worker` (and `start`) run it, composed from configuration:
 * the Bot API client of TELEGRAM_BOT_TOKEN at TELEGRAM_API_ROOT, the fleet-wide rate limiter, and
 * the deployment defaults (bot id, OPS_CHAT_ID) that callers of relay.enqueue_outbound may omit.
 */
import type { Pool } from 'pg';
import type { Config } from '../config';
import type { Logger } from '../observability/logger';
import type { RateLimitMetrics } from '../observability/metrics';
import type { JobKind } from '../queue/job-kind';
import { createBotApiClient } from '../telegram/client';
import { normalizeChatId } from './message';
import { outboundSettingsSave } from './queries';
import { createOutboundRateLimiter } from './rate-limit';
import { createOutboundKind, type OutboundEffects } from './send-kind';
import type { OutboundRow } from './send-message';

export async function createOutboundKindFromConfig(
  config: Config,
  deps: { pool: Pool; logger: Logger; token: string; rateLimitMetrics?: RateLimitMetrics },
): Promise<JobKind<OutboundRow, OutboundEffects>> {
  const telegram = createBotApiClient({
    token: deps.token,
    apiRoot: config.TELEGRAM_API_ROOT,
    timeoutMs: config.OUTBOUND_SEND_TIMEOUT,
    maxSockets: Math.max(4, config.WORKER_CONCURRENCY),
  });
  const opsChatId = config.OPS_CHAT_ID ? (normalizeChatId(config.OPS_CHAT_ID) ?? null) : null;
  await outboundSettingsSave(deps.pool, { botId: telegram.botId, defaultChatId: opsChatId });
  if (!opsChatId)
    deps.logger.warn(
      'OPS_CHAT_ID is not set: no alerts about failed outbound messages, and messages without chat_id are refused',
    );
  const limiter = createOutboundRateLimiter(
    {
      mode: config.OUTBOUND_RATE_MODE,
      perBot: config.OUTBOUND_RATE_PER_BOT,
      perChat: config.OUTBOUND_RATE_PER_CHAT,
      perGroup: config.OUTBOUND_RATE_PER_GROUP,
      paidBroadcast: config.PAID_BROADCAST_RATE > 0 ? { count: config.PAID_BROADCAST_RATE, windowMs: 1000 } : null,
    },
    { metrics: deps.rateLimitMetrics },
  );
  const kind = createOutboundKind({
    pool: deps.pool,
    telegram,
    limiter,
    opsChatId,
    sendTimeoutMs: config.OUTBOUND_SEND_TIMEOUT,
    alertsEnabled: config.META_ALERT_ON_DROP,
    alertCoalesceMs: config.ALERT_COALESCE,
    maxRetryAfterMs: config.OUTBOUND_MAX_RETRY_AFTER,
    max429: config.OUTBOUND_MAX_429,
  });
  return { ...kind, close: () => telegram.close() };
}
