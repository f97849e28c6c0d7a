/**
 * The state and behaviour of the Bot API sandbox without its HTTP server: bots, faults, flood
 * control, webhook dispatchers, the call log. `bot-api.ts` wraps it in a server and the public API.
 */
import type { Logger } from '../observability/logger';
import { BotRegistry, type BotState, type StoredUpdate, type WebhookSettings } from './bot-state';
import { CallLog } from './call-log';
import { DEFAULT_FIRST_UPDATE_ID } from './constants';
import { FaultInjector } from './faults';
import { BotApiError } from './http-io';
import { findMethod, type MethodEnv } from './methods';
import { DEFAULT_RATE_LIMITS, mergeRateLimits, RateLimiter, type RateLimitsInput } from './rate-limiter';
import { createRng } from './rng';
import type { CallRecord, RateLimitConfig, ScriptedChatError, WebhookRetryConfig } from './types';
import { WebhookDispatcher } from './webhook-dispatcher';

export interface SandboxCoreOptions {
  limits?: RateLimitsInput;
  firstUpdateId?: number;
  webhookRetry?: Partial<WebhookRetryConfig>;
  seed?: number;
  /** Upper clamp of getUpdates `timeout`, seconds (Telegram: 50). */
  maxPollTimeoutSeconds?: number;
  /** Call records kept (oldest dropped beyond). Default 100,000. */
  maxCallRecords?: number;
  onCall?: (record: CallRecord) => void;
  logger: Logger;
}

export class SandboxCore {
  readonly registry: BotRegistry;
  readonly faults: FaultInjector;
  readonly limiter: RateLimiter;
  readonly callLog: CallLog;
  readonly globalChatErrors = new Map<string, ScriptedChatError>();
  readonly env: MethodEnv;
  readonly webhookRetry: WebhookRetryConfig;
  readonly initialLimits: RateLimitConfig;
  private readonly dispatchers = new Map<number, WebhookDispatcher>();
  private sentSeq = 0;
  private callbackSeq = 0;

  constructor(readonly opts: SandboxCoreOptions) {
    this.registry = new BotRegistry(opts.firstUpdateId ?? DEFAULT_FIRST_UPDATE_ID);
    this.faults = new FaultInjector(createRng(opts.seed));
    this.initialLimits = mergeRateLimits(DEFAULT_RATE_LIMITS, opts.limits);
    this.limiter = new RateLimiter(this.initialLimits);
    this.callLog = new CallLog(opts.maxCallRecords ?? 100_000, opts.onCall);
    this.webhookRetry = { baseMs: 1000, capMs: 60_000, timeoutMs: 60_000, ...opts.webhookRetry };
    this.env = {
      limiter: this.limiter,
      globalChatErrors: this.globalChatErrors,
      onRateLimited: () => this.callLog.countRateLimited(),
      nextSentSeq: () => ++this.sentSeq,
      maxPollTimeoutSeconds: opts.maxPollTimeoutSeconds ?? 50,
      startWebhook: (bot, settings) => this.startWebhook(bot, settings),
      stopWebhook: (bot) => this.stopWebhook(bot),
    };
  }

  get logger(): Logger {
    return this.opts.logger;
  }

  nextCallbackId(botId: number): string {
    return `${botId}${String(++this.callbackSeq).padStart(8, '0')}`;
  }

  /** Queue an update for the bot and wake whoever consumes it (long poll or webhook). */
  deliver(bot: BotState, u: StoredUpdate, wake = true): boolean {
    if (!bot.push(u)) return false;
    if (!wake) return true;
    if (bot.webhook) this.dispatchers.get(bot.id)?.enqueue(u);
    else bot.poll?.finish();
    return true;
  }

  /** After a bulk of deliver(…, wake=false): wake consumers once. */
  wake(bot: BotState, added: StoredUpdate[]): void {
    if (bot.webhook) {
      const d = this.dispatchers.get(bot.id);
      for (const u of added) d?.enqueue(u);
    } else bot.poll?.finish();
  }

  private startWebhook(bot: BotState, settings: WebhookSettings): void {
    this.stopWebhook(bot);
    const dispatcher = new WebhookDispatcher(bot, settings, this.webhookRetry, {
      logger: this.logger,
      onDelivered: () => this.callLog.countWebhook(true),
      onFailed: () => this.callLog.countWebhook(false),
      onReply: (b, body) => void this.runWebhookReply(b, body),
    });
    this.dispatchers.set(bot.id, dispatcher);
  }

  private stopWebhook(bot: BotState): void {
    this.dispatchers.get(bot.id)?.stop();
    this.dispatchers.delete(bot.id);
  }

  /** Telegram executes a method returned in a webhook response; its result is not sent anywhere. */
  private async runWebhookReply(bot: BotState, body: Record<string, unknown>): Promise<void> {
    const def = findMethod(String(body.method));
    const { method: _m, ...params } = body;
    const started = Date.now();
    const base = {
      bot_id: bot.id,
      method: def?.name ?? String(body.method),
      params,
      time: started,
      via: 'webhook_reply' as const,
    };
    if (!def || def.name === 'getUpdates') {
      this.callLog.add({
        ...base,
        duration_ms: 0,
        outcome: 'error',
        status: 404,
        error_code: 404,
        description: 'Not Found',
      });
      return;
    }
    try {
      await def.handler(bot, params, this.env, { files: [], onClientClose: () => undefined });
      this.callLog.add({ ...base, duration_ms: Date.now() - started, outcome: 'ok', status: 200 });
    } catch (err) {
      const e = err instanceof BotApiError ? err : new BotApiError(500, 'Internal Server Error');
      this.callLog.add({
        ...base,
        duration_ms: Date.now() - started,
        outcome: e.errorCode === 429 ? 'rate_limited' : 'error',
        status: e.errorCode,
        error_code: e.errorCode,
        description: e.description,
      });
    }
  }

  /** Stop every webhook dispatcher and fail every pending long poll with `error` (nothing answered). */
  shutdownConsumers(error: Error): void {
    for (const d of this.dispatchers.values()) d.stop();
    this.dispatchers.clear();
    for (const bot of this.registry.all()) bot.poll?.finish(error);
  }

  reset(error: Error): void {
    this.shutdownConsumers(error);
    this.registry.clear();
    this.faults.reset();
    this.limiter.setLimits(this.initialLimits);
    this.globalChatErrors.clear();
    this.callLog.reset();
    this.sentSeq = 0;
    this.callbackSeq = 0;
  }
}
