/**
 * Webhook delivery as Telegram does it: each update is POSTed as JSON to the webhook URL (with
 * `X-Telegram-Bot-Api-Secret-Token` when a secret is set). Updates of one chat go strictly in order:
 * the next one only after a 2xx for the previous one. Different chats are delivered concurrently, up
 * to `max_connections`. Non-2xx, a dropped connection or a timeout is retried after a delay that
 * starts at `baseMs` and doubles up to `capMs`; a `Retry-After` response header (seconds, ≤ 3600)
 * replaces the computed delay. A 2xx confirms (forgets) the update.
 */
import http from 'node:http';
import https from 'node:https';
import { backoffMs } from '../lifecycle/backoff';
import type { Logger } from '../observability/logger';
import type { BotState, StoredUpdate, WebhookSettings } from './bot-state';
import type { WebhookRetryConfig } from './types';
import { serializeStored } from './update-factory';

export interface WebhookHooks {
  onDelivered(bot: BotState): void;
  onFailed(bot: BotState): void;
  /** A JSON body with a `method` in a 2xx answer is executed as a Bot API call (webhook reply). */
  onReply(bot: BotState, body: Record<string, unknown>): void;
  logger: Logger;
}

type LaneState = 'idle' | 'ready' | 'busy' | 'waiting';

interface Lane {
  slots: number[];
  head: number;
  state: LaneState;
  attempt: number;
  timer?: NodeJS.Timeout;
}

interface Outcome {
  ok: boolean;
  error?: string;
  retryAfterMs?: number;
  reply?: Record<string, unknown>;
}

export class WebhookDispatcher {
  private readonly lanes = new Map<string, Lane>();
  private ready: string[] = [];
  private readyHead = 0;
  private active = 0;
  private stopped = false;
  private readonly inflight = new Set<http.ClientRequest>();
  private readonly agent: http.Agent;
  private readonly target: URL;

  constructor(
    private readonly bot: BotState,
    private readonly settings: WebhookSettings,
    private readonly retry: WebhookRetryConfig,
    private readonly hooks: WebhookHooks,
  ) {
    this.target = new URL(settings.url);
    const AgentCtor = this.target.protocol === 'https:' ? https.Agent : http.Agent;
    this.agent = new AgentCtor({ keepAlive: true, maxSockets: settings.maxConnections });
    for (const u of bot.pending.values()) this.enqueue(u, false);
    this.pump();
  }

  enqueue(u: StoredUpdate, pump = true): void {
    if (this.stopped) return;
    let lane = this.lanes.get(u.chatKey);
    if (!lane) {
      lane = { slots: [], head: 0, state: 'idle', attempt: 0 };
      this.lanes.set(u.chatKey, lane);
    }
    lane.slots.push(u.slot);
    if (lane.state === 'idle') this.markReady(u.chatKey, lane);
    if (pump) this.pump();
  }

  stop(): void {
    this.stopped = true;
    for (const lane of this.lanes.values()) if (lane.timer) clearTimeout(lane.timer);
    this.lanes.clear();
    for (const req of this.inflight) req.destroy();
    this.inflight.clear();
    this.agent.destroy();
  }

  private markReady(key: string, lane: Lane): void {
    lane.state = 'ready';
    this.ready.push(key);
  }

  private pump(): void {
    while (!this.stopped && this.active < this.settings.maxConnections && this.readyHead < this.ready.length) {
      const key = this.ready[this.readyHead++];
      const lane = this.lanes.get(key);
      if (lane && lane.state === 'ready') this.deliver(key, lane);
    }
    if (this.readyHead > 1024 && this.readyHead * 2 > this.ready.length) {
      this.ready = this.ready.slice(this.readyHead);
      this.readyHead = 0;
    }
  }

  private deliver(key: string, lane: Lane): void {
    // Skip updates confirmed meanwhile (e.g. dropped with drop_pending_updates).
    while (lane.head < lane.slots.length && !this.bot.pending.has(lane.slots[lane.head])) lane.head++;
    if (lane.head >= lane.slots.length) {
      this.lanes.delete(key);
      return;
    }
    const slot = lane.slots[lane.head];
    const update = this.bot.pending.get(slot) as StoredUpdate;
    lane.state = 'busy';
    this.active++;
    void this.post(serializeStored(update)).then((outcome) => {
      this.active--;
      if (this.stopped) return;
      if (outcome.ok) {
        this.bot.pending.delete(slot);
        lane.head++;
        lane.attempt = 0;
        if (lane.head > 1024 && lane.head * 2 > lane.slots.length) {
          lane.slots = lane.slots.slice(lane.head);
          lane.head = 0;
        }
        this.hooks.onDelivered(this.bot);
        if (outcome.reply) this.hooks.onReply(this.bot, outcome.reply);
        if (lane.head < lane.slots.length) this.markReady(key, lane);
        else this.lanes.delete(key);
      } else {
        lane.attempt++;
        this.bot.lastErrorDate = Math.floor(Date.now() / 1000);
        this.bot.lastErrorMessage = outcome.error;
        this.hooks.onFailed(this.bot);
        const backoff = backoffMs({ ...this.retry, jitter: 'none' }, lane.attempt); // Telegram's own retry
        const delay = outcome.retryAfterMs ?? backoff;
        lane.state = 'waiting';
        lane.timer = setTimeout(() => {
          lane.timer = undefined;
          if (this.stopped) return;
          this.markReady(key, lane);
          this.pump();
        }, delay);
        lane.timer.unref();
      }
      this.pump();
    });
  }

  private post(body: string): Promise<Outcome> {
    return new Promise((resolve) => {
      const headers: Record<string, string | number> = {
        'Content-Type': 'application/json',
        'Content-Length': Buffer.byteLength(body),
      };
      if (this.settings.secretToken) headers['X-Telegram-Bot-Api-Secret-Token'] = this.settings.secretToken;
      const mod = this.target.protocol === 'https:' ? https : http;
      let settled = false;
      const finish = (o: Outcome): void => {
        if (settled) return;
        settled = true;
        this.inflight.delete(req);
        resolve(o);
      };
      const req = mod.request(this.target, { method: 'POST', headers, agent: this.agent }, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size <= 1024 * 1024) chunks.push(c);
        });
        res.on('error', () => finish({ ok: false, error: 'Connection reset by peer' }));
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) {
            finish({ ok: true, reply: parseReply(res.headers['content-type'], Buffer.concat(chunks)) });
            return;
          }
          finish({
            ok: false,
            error: `Wrong response from the webhook: ${status} ${res.statusMessage ?? ''}`.trim(),
            retryAfterMs: retryAfterMs(res.headers['retry-after']),
          });
        });
      });
      this.inflight.add(req);
      req.setTimeout(this.retry.timeoutMs, () => {
        finish({ ok: false, error: 'Read timeout expired' });
        req.destroy();
      });
      req.on('error', (err: NodeJS.ErrnoException) => {
        finish({ ok: false, error: err.code === 'ECONNREFUSED' ? 'Connection refused' : 'Connection reset by peer' });
      });
      req.end(body);
    });
  }
}

function retryAfterMs(header: string | string[] | undefined): number | undefined {
  const v = Array.isArray(header) ? header[0] : header;
  if (!v || !/^\s*\d+\s*$/.test(v)) return undefined;
  return Math.min(Number(v), 3600) * 1000;
}

function parseReply(contentType: string | undefined, body: Buffer): Record<string, unknown> | undefined {
  if (body.length === 0 || !(contentType ?? '').includes('application/json')) return undefined;
  try {
    const parsed = JSON.parse(body.toString('utf8')) as unknown;
    if (parsed && typeof parsed === 'object' && typeof (parsed as { method?: unknown }).method === 'string') {
      return parsed as Record<string, unknown>;
    }
  } catch {
    // not a webhook reply
  }
  return undefined;
}
