/**
 * The Telegram-faithful Bot API sandbox: a real HTTP server speaking the Bot API at
 * `/bot<token>/<method>` plus a JSON control API under `/sandbox/…`, and the same control
 * operations in process. See README section "Sandbox" and the contract tests in
 * test/integration/sandbox for the exact behaviour.
 */
import http from 'node:http';
import type { Logger } from '../observability/logger';
import { silentLogger } from '../observability/logger';
import type { BotState } from './bot-state';
import { validateScriptedError } from './bot-state';
import { handleBotApiRequest } from './bot-api-routes';
import { handleControlRequest } from './control-routes';
import { sendJson } from './http-io';
import { PeerServer } from './peer-server';
import { ClientGone } from './polling';
import type { RateLimitsInput } from './rate-limiter';
import { mergeRateLimits } from './rate-limiter';
import { SandboxCore } from './sandbox-core';
import type {
  BotStateSummary,
  CallRecord,
  FaultConfig,
  InjectCallbackInput,
  InjectMessageInput,
  InjectMessagesInput,
  InjectMessagesResult,
  RateLimitConfig,
  SandboxStats,
  ScriptedChatError,
  SentMessage,
  TgUpdate,
  WebhookInfo,
  WebhookRetryConfig,
} from './types';
import { buildCallbackUpdate, buildMessageUpdate, buildRawUpdate } from './update-factory';

export interface BotApiSandboxOptions {
  host?: string;
  /** 0 (default) picks a free port. */
  port?: number;
  limits?: RateLimitsInput;
  /** First update_id of every bot (default 100000); ids then increase by one per bot. */
  firstUpdateId?: number;
  webhookRetry?: Partial<WebhookRetryConfig>;
  /** Seed of the fault-injection RNG (deterministic faults). */
  seed?: number;
  /** Upper clamp of getUpdates `timeout` in seconds (Telegram: 50). */
  maxPollTimeoutSeconds?: number;
  /** How many call records are kept (default 100,000; oldest dropped). */
  maxCallRecords?: number;
  /** Called for every recorded call (benchmarks). */
  onCall?: (record: CallRecord) => void;
  /** Bytes of one upload kept in its call record (`files[].data_base64`, default 1 MiB); sha256 always. */
  maxRecordedFileBytes?: number;
  /** How long an injected callback query can be answered, seconds (default 300; 0: never). */
  callbackQueryTtlSeconds?: number;
  logger?: Logger;
}

export interface BotApiSandbox {
  /** `http://host:port` — the apiRoot for a Bot API client (TELEGRAM_API_ROOT). Set by start(). */
  readonly url: string;
  start(): Promise<string>;
  stop(): Promise<void>;
  /** Resolves with why once the server stops without stop(): `tg-relay start` exits on it. */
  readonly died: Promise<string>;
  /** Closes the server as if it had died (POST /sandbox/crash): rehearses what a supervisor does then. */
  crash(): void;

  injectMessage(token: string, input: InjectMessageInput): TgUpdate;
  injectMessages(token: string, count: number, input: InjectMessagesInput): InjectMessagesResult;
  injectCallbackQuery(token: string, input: InjectCallbackInput): TgUpdate;
  /**
   * Insert an arbitrary item in the getUpdates stream: a string is delivered verbatim (even if it is
   * not JSON), any other value JSON-serialised as given. The item occupies the next update_id slot
   * (previous update_id + 1, returned as `slot`), so getUpdates with offset > slot confirms it.
   */
  injectRawUpdate(token: string, raw: unknown): { slot: number };
  /**
   * Telegram's update_id reset (after a week without updates): the next update gets `nextUpdateId`,
   * which may be below ids already served; a getUpdates offset past the queue is then answered from
   * its head. Refused unless the queue is empty (Telegram resets only then).
   */
  resetUpdateIds(token: string, nextUpdateId: number): void;

  sent(token: string): SentMessage[];
  answeredCallbacks(token: string): Array<{ callback_query_id: string; text?: string; show_alert?: boolean }>;
  pendingCount(token: string): number;
  /** The highest offset getUpdates was called with (all update_ids below it are confirmed), or null. */
  confirmedOffset(token: string): number | null;
  webhookInfo(token: string): WebhookInfo;
  botState(token: string): BotStateSummary;
  calls(token?: string, filter?: { method?: string }): CallRecord[];
  stats(): SandboxStats;

  /** Global faults, or one bot's override when `token` is given; `null` clears. */
  setFaults(faults: FaultConfig | null, token?: string): void;
  /** Script an error for sends to a chat (of one bot, or of every bot when token is undefined); null clears. */
  scriptChatError(
    token: string | undefined,
    chatId: number | string,
    err: ScriptedChatError | ScriptedChatError['kind'] | null,
  ): void;
  revokeToken(token: string): void;
  setLimits(limits: RateLimitsInput): void;
  limits(): RateLimitConfig;
  /** Forget every bot, update, record, fault, scripted error; restore the initial limits. */
  reset(): void;
}

class BotApiSandboxServer implements BotApiSandbox {
  private readonly core: SandboxCore;
  private readonly server = new PeerServer('Bot API sandbox', (req, res) => this.route(req, res), 5000);

  constructor(private readonly opts: BotApiSandboxOptions) {
    this.core = new SandboxCore({
      limits: opts.limits,
      firstUpdateId: opts.firstUpdateId,
      webhookRetry: opts.webhookRetry,
      seed: opts.seed,
      maxPollTimeoutSeconds: opts.maxPollTimeoutSeconds,
      maxCallRecords: opts.maxCallRecords,
      onCall: opts.onCall,
      maxRecordedFileBytes: opts.maxRecordedFileBytes,
      callbackQueryTtlSeconds: opts.callbackQueryTtlSeconds,
      logger: (opts.logger ?? silentLogger()).child({ component: 'sandbox-bot-api' }),
    });
  }

  get url(): string {
    return this.server.url;
  }

  get died(): Promise<string> {
    return this.server.died;
  }

  start(): Promise<string> {
    return this.server.start(this.opts.host ?? '127.0.0.1', this.opts.port ?? 0);
  }

  async stop(): Promise<void> {
    if (!this.server.listening) return;
    this.core.shutdownConsumers(new ClientGone());
    await this.server.close();
  }

  crash(): void {
    this.core.shutdownConsumers(new ClientGone());
    this.server.crash();
  }

  private route(req: http.IncomingMessage, res: http.ServerResponse): void {
    const fail = (err: unknown): void => {
      this.core.logger.error({ err }, 'sandbox request failed');
      if (!res.headersSent && !res.destroyed)
        sendJson(res, 500, { ok: false, error_code: 500, description: 'Internal Server Error' });
    };
    try {
      const url = new URL(req.url ?? '/', 'http://sandbox');
      const m = /^\/bot([^/]+)\/([^/]*)$/.exec(url.pathname);
      let work: Promise<void>;
      if (m) {
        let token: string;
        try {
          token = decodeURIComponent(m[1]);
        } catch {
          token = ''; // malformed escape: answered 401 like any bad token
        }
        work = handleBotApiRequest(this.core, req, res, token, m[2], url);
      } else if (url.pathname.startsWith('/sandbox/')) {
        work = handleControlRequest(this, req, res, url);
      } else {
        sendJson(res, 404, { ok: false, error_code: 404, description: 'Not Found' });
        return;
      }
      work.catch(fail);
    } catch (err) {
      fail(err);
    }
  }

  private bot(token: string): BotState {
    return this.core.registry.getOrCreate(token);
  }

  injectMessage(token: string, input: InjectMessageInput): TgUpdate {
    const bot = this.bot(token);
    const { stored, update } = buildMessageUpdate(bot, input);
    this.core.deliver(bot, stored);
    return update;
  }

  injectMessages(token: string, count: number, input: InjectMessagesInput): InjectMessagesResult {
    if (!Number.isInteger(count) || count < 0) throw new Error('count must be a non-negative integer');
    const bot = this.bot(token);
    const chats = Array.isArray(input.chats)
      ? input.chats
      : Array.from({ length: input.chats }, (_, i) => (input.chatBase ?? 1001) + i);
    if (chats.length === 0 && count > 0) throw new Error('chats must name at least one chat');
    const prefix = input.textPrefix ?? 'message ';
    const added = [];
    let first: number | null = null;
    let last: number | null = null;
    for (let i = 0; i < count; i++) {
      const chatId = chats[i % chats.length];
      const { stored, update } = buildMessageUpdate(bot, { chatId, text: `${prefix}${i}` });
      if (this.core.deliver(bot, stored, false)) added.push(stored);
      first ??= update.update_id;
      last = update.update_id;
    }
    this.core.wake(bot, added);
    return { count, first_update_id: first, last_update_id: last };
  }

  injectCallbackQuery(token: string, input: InjectCallbackInput): TgUpdate {
    const bot = this.bot(token);
    const { stored, update } = buildCallbackUpdate(bot, input, this.core.nextCallbackId(bot.id));
    this.core.deliver(bot, stored);
    return update;
  }

  injectRawUpdate(token: string, raw: unknown): { slot: number } {
    const bot = this.bot(token);
    const stored = buildRawUpdate(bot, raw);
    this.core.deliver(bot, stored);
    return { slot: stored.slot };
  }

  resetUpdateIds(token: string, nextUpdateId: number): void {
    this.bot(token).resetUpdateIds(nextUpdateId);
  }

  sent(token: string): SentMessage[] {
    return this.bot(token).sent.map((s) => ({ ...s }));
  }

  answeredCallbacks(token: string): Array<{ callback_query_id: string; text?: string; show_alert?: boolean }> {
    return this.bot(token).answeredCallbacks.map((a) => ({ ...a }));
  }

  pendingCount(token: string): number {
    return this.bot(token).pending.size;
  }

  confirmedOffset(token: string): number | null {
    return this.bot(token).confirmedOffset;
  }

  webhookInfo(token: string): WebhookInfo {
    return this.bot(token).webhookInfo();
  }

  botState(token: string): BotStateSummary {
    const bot = this.bot(token);
    return {
      bot_id: bot.id,
      username: bot.username,
      pending_count: bot.pending.size,
      confirmed_offset: bot.confirmedOffset,
      next_update_id: bot.nextUpdateId,
      webhook: bot.webhook ? bot.webhookInfo() : null,
      sent_count: bot.sent.length,
      revoked: bot.revoked,
      long_poll_open: bot.poll !== null,
    };
  }

  calls(token?: string, filter: { method?: string } = {}): CallRecord[] {
    return this.core.callLog.list({
      botId: token === undefined ? undefined : this.bot(token).id,
      method: filter.method,
    });
  }

  stats(): SandboxStats {
    return this.core.callLog.stats();
  }

  setFaults(faults: FaultConfig | null, token?: string): void {
    this.core.faults.set(faults, token === undefined ? undefined : this.bot(token).id);
  }

  scriptChatError(
    token: string | undefined,
    chatId: number | string,
    err: ScriptedChatError | ScriptedChatError['kind'] | null,
  ): void {
    const map = token === undefined ? this.core.globalChatErrors : this.bot(token).chatErrors;
    const key = String(chatId);
    if (err === null) map.delete(key);
    else map.set(key, validateScriptedError(err));
  }

  revokeToken(token: string): void {
    this.bot(token).revoked = true;
  }

  setLimits(limits: RateLimitsInput): void {
    this.core.limiter.setLimits(mergeRateLimits(this.core.limiter.limits, limits));
  }

  limits(): RateLimitConfig {
    return this.core.limiter.limits;
  }

  reset(): void {
    this.core.reset(new ClientGone());
  }
}

export function createBotApiSandbox(opts: BotApiSandboxOptions = {}): BotApiSandbox {
  return new BotApiSandboxServer(opts);
}
