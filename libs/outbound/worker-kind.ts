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
import { withBotSettings } from '../bots/registry';
import type { BotWatch } from '../bots/watch';
import { createBotApiClient, type BotApiClient } from '../telegram/client';
import { normalizeChatId } from './message';
import { outboundSettingsSave } from './queries';
import { createOutboundRateLimiter, type OutboundRateLimiter } from './rate-limit';
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
  const limiter = rateLimiterOf(config, deps.rateLimitMetrics);
  const kind = createOutboundKind({
    ...kindOptions(config),
    pool: deps.pool,
    telegram,
    limiter,
    opsChatId,
  });
  return { ...kind, close: () => telegram.close() };
}

/** What both modes take from the configuration. */
const kindOptions = (config: Config) => ({
  sendTimeoutMs: config.OUTBOUND_SEND_TIMEOUT,
  alertsEnabled: config.META_ALERT_ON_DROP,
  alertCoalesceMs: config.ALERT_COALESCE,
  maxRetryAfterMs: config.OUTBOUND_MAX_RETRY_AFTER,
  max429: config.OUTBOUND_MAX_429,
});

/** The rate limiter of the configuration, with a registered bot's own settings over it. */
function rateLimiterOf(config: Config, metrics?: RateLimitMetrics, settings: Record<string, string> = {}) {
  const c = withBotSettings(config, settings);
  return createOutboundRateLimiter(
    {
      mode: c.OUTBOUND_RATE_MODE,
      perBot: c.OUTBOUND_RATE_PER_BOT,
      perChat: c.OUTBOUND_RATE_PER_CHAT,
      perGroup: c.OUTBOUND_RATE_PER_GROUP,
      paidBroadcast: c.PAID_BROADCAST_RATE > 0 ? { count: c.PAID_BROADCAST_RATE, windowMs: 1000 } : null,
    },
    { metrics },
  );
}

/**
 * outbound.send for a worker without TELEGRAM_BOT_TOKEN: the rows of every enabled registered bot,
 * each sent with its own token and charged to its own rate limits (its settings over the
 * configuration's), the claim shared fairly between the bots. Clients are made on first use and
 * again when a bot's registration changes. A bot's alerts go to its own operators' chat (its
 * registration's ops_chat_id), else to OPS_CHAT_ID.
 */
export function createFleetOutboundKind(
  config: Config,
  deps: { pool: Pool; bots: BotWatch; rateLimitMetrics?: RateLimitMetrics },
): JobKind<OutboundRow, OutboundEffects> {
  const clients = new Map<string, { version: string; telegram: BotApiClient; limiter: OutboundRateLimiter }>();
  const of = (id: string) => {
    const bot = deps.bots.bots().get(id);
    let c = clients.get(id);
    if (c && c.version !== bot?.version) {
      c.telegram.close();
      clients.delete(id);
      c = undefined;
    }
    if (!bot) return undefined;
    if (!c) {
      const telegram = createBotApiClient({
        token: bot.token,
        apiRoot: config.TELEGRAM_API_ROOT,
        timeoutMs: config.OUTBOUND_SEND_TIMEOUT,
        maxSockets: Math.max(4, config.WORKER_BOT_CONCURRENCY),
      });
      c = { version: bot.version, telegram, limiter: rateLimiterOf(config, deps.rateLimitMetrics, bot.settings) };
      clients.set(id, c);
    }
    return c;
  };
  const kind = createOutboundKind({
    ...kindOptions(config),
    pool: deps.pool,
    fleet: { botIds: () => [...deps.bots.bots().keys()], of, perBot: config.WORKER_BOT_CONCURRENCY },
    limiter: rateLimiterOf(config, deps.rateLimitMetrics),
    opsChatId: config.OPS_CHAT_ID ? (normalizeChatId(config.OPS_CHAT_ID) ?? null) : null,
    opsChatOf: (id) => deps.bots.bots().get(id)?.ops_chat_id ?? null,
  });
  return {
    ...kind,
    close: () => {
      for (const c of clients.values()) c.telegram.close();
      clients.clear();
    },
  };
}
