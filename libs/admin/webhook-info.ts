import type { Logger } from '../observability/logger';

/** Telegram's count of updates waiting for the bot, as last fetched. */
export interface PendingUpdates {
  count: number;
  at: string;
}

export interface PendingUpdatesSource {
  /** The last known value (never blocks); starts a refresh in the background when it is stale. */
  peek(botId: string): PendingUpdates | undefined;
}

export const PENDING_UPDATES_TTL_MS = 15_000;

/**
 * Caches `getWebhookInfo().pending_update_count` per bot so that stats and metrics never wait
 * on Telegram: a scrape reads the cache and, if it is older than the TTL, refreshes it for the
 * next one. Works for polling bots too (the field is filled either way).
 */
export function pendingUpdatesCache(
  fetchCount: (botId: string) => Promise<number | undefined>,
  opts: { ttlMs?: number; clock?: () => Date; logger?: Logger } = {},
): PendingUpdatesSource & { refresh(botId: string): Promise<void> } {
  const ttl = opts.ttlMs ?? PENDING_UPDATES_TTL_MS;
  const clock = opts.clock ?? (() => new Date());
  const cache = new Map<string, { value?: PendingUpdates; fetchedAt: number; inflight?: Promise<void> }>();
  const refresh = (botId: string): Promise<void> => {
    const entry = cache.get(botId) ?? { fetchedAt: 0 };
    cache.set(botId, entry);
    if (entry.inflight) return entry.inflight;
    entry.inflight = fetchCount(botId)
      .then((n) => {
        if (n !== undefined) entry.value = { count: n, at: clock().toISOString() };
      })
      .catch((err) => opts.logger?.debug({ err, botId }, 'getWebhookInfo failed; pending_update_count unknown'))
      .finally(() => {
        entry.fetchedAt = clock().getTime();
        entry.inflight = undefined;
      });
    return entry.inflight;
  };
  return {
    refresh,
    peek(botId) {
      const entry = cache.get(botId);
      if (!entry || clock().getTime() - entry.fetchedAt > ttl) void refresh(botId);
      return entry?.value;
    },
  };
}

/**
 * `getWebhookInfo` for the configured bot only (other bot ids have no token here). The URL holds
 * the token: it is never logged, and errors carry only the HTTP status.
 */
export function webhookInfoFetcher(
  apiRoot: string,
  token: string,
  botId: string,
  timeoutMs = 5_000,
): (id: string) => Promise<number | undefined> {
  const url = `${apiRoot.replace(/\/+$/, '')}/bot${token}/getWebhookInfo`;
  return async (id) => {
    if (id !== botId) return undefined;
    const res = await fetch(url, { method: 'POST', signal: AbortSignal.timeout(timeoutMs) }).catch(() => {
      throw new Error('getWebhookInfo: network error');
    });
    const body = (await res.json().catch(() => undefined)) as
      { ok?: boolean; result?: { pending_update_count?: number } } | undefined;
    if (!res.ok || !body?.ok) throw new Error(`getWebhookInfo: HTTP ${res.status}`);
    return body.result?.pending_update_count;
  };
}
