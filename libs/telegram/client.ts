/**
 * A small Bot API client: `callApi(method, params, { signal, timeoutMs, files })` over keep-alive HTTP,
 * JSON bodies, multipart/form-data when files are uploaded (libs/telegram/post.ts), every answer read by libs/telegram/envelope.ts into its result
 * or a typed error (libs/telegram/errors.ts). No retries here: callers decide (the poller
 * backs off, the outbound worker classifies). The token is only ever part of the request path and
 * never appears in an error, a log line or `toString()` of the client.
 */
import http from 'node:http';
import https from 'node:https';
import { botApiError, isSuccessStatus, readBotApiAnswer } from './envelope';
import { postBotApi, type MultipartFile } from './post';

export const TELEGRAM_CALL_TIMEOUT_MS_DEFAULT = 30_000;

export interface BotApiClientOptions {
  token: string;
  /** `https://api.telegram.org` by default; a root with a path gets a trailing slash added. */
  apiRoot?: string;
  /** Per-call timeout when the call gives none. */
  timeoutMs?: number;
  /** Concurrent sockets to the API root (keep-alive pool). */
  maxSockets?: number;
}

export interface CallOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
  /** Files to upload: the call goes as multipart/form-data, its params naming each `"attach://<part>"`. */
  files?: readonly MultipartFile[];
}

/** A 2xx answer, body as text (getUpdates decodes it itself to keep each update's raw bytes). */
export interface RawAnswer {
  status: number;
  body: string;
}

export interface WebhookInfo {
  url: string;
  has_custom_certificate: boolean;
  pending_update_count: number;
  max_connections?: number;
  allowed_updates?: string[];
  last_error_date?: number;
  last_error_message?: string;
}

export interface BotUser {
  id: number;
  is_bot: boolean;
  first_name: string;
  username?: string;
}

export interface BotApiClient {
  /** The numeric prefix of the token (not a secret). */
  readonly botId: string;
  callApi<T = unknown>(method: string, params?: Record<string, unknown>, opts?: CallOptions): Promise<T>;
  /** The raw text of a 2xx answer; non-2xx answers throw `TelegramApiError` like `callApi`. */
  callApiRaw(method: string, params?: Record<string, unknown>, opts?: CallOptions): Promise<RawAnswer>;
  getMe(opts?: CallOptions): Promise<BotUser>;
  setWebhook(
    params: {
      url: string;
      secret_token?: string;
      max_connections?: number;
      allowed_updates?: string[];
      drop_pending_updates?: boolean;
    },
    opts?: CallOptions,
  ): Promise<true>;
  deleteWebhook(params?: { drop_pending_updates?: boolean }, opts?: CallOptions): Promise<true>;
  getWebhookInfo(opts?: CallOptions): Promise<WebhookInfo>;
  /** Closes idle keep-alive sockets. Idempotent. */
  close(): void;
}

export function createBotApiClient(opts: BotApiClientOptions): BotApiClient {
  const token = opts.token;
  const m = /^(\d+):/.exec(token);
  if (!m) throw new Error('malformed bot token: expected <digits>:<secret>');
  const botId = m[1];
  let root = opts.apiRoot ?? 'https://api.telegram.org';
  if (!root.endsWith('/')) root += '/';
  const rootUrl = new URL(root);
  const isHttps = rootUrl.protocol === 'https:';
  const transport = isHttps ? https : http;
  const agent = new (isHttps ? https.Agent : http.Agent)({ keepAlive: true, maxSockets: opts.maxSockets ?? 50 });
  const defaultTimeout = opts.timeoutMs ?? TELEGRAM_CALL_TIMEOUT_MS_DEFAULT;
  const urls = new Map<string, URL>();
  const urlFor = (method: string): URL => {
    let u = urls.get(method);
    if (!u) {
      u = new URL(`./bot${token}/${encodeURIComponent(method)}`, rootUrl);
      urls.set(method, u);
    }
    return u;
  };

  const post = (method: string, params: Record<string, unknown> | undefined, co: CallOptions = {}) =>
    postBotApi({ transport, agent, url: urlFor(method) }, method, params, {
      signal: co.signal,
      timeoutMs: co.timeoutMs ?? defaultTimeout,
      files: co.files,
    });

  async function callApiRaw(method: string, params?: Record<string, unknown>, co?: CallOptions): Promise<RawAnswer> {
    const r = await post(method, params, co);
    if (!isSuccessStatus(r.status)) throw botApiError(method, r);
    return { status: r.status, body: r.body };
  }

  async function callApi<T>(method: string, params?: Record<string, unknown>, co?: CallOptions): Promise<T> {
    // the caller names the result's type: Telegram's answer to `method` has that shape
    return readBotApiAnswer(method, await post(method, params, co)) as T;
  }

  const client: BotApiClient = {
    botId,
    callApi,
    callApiRaw,
    getMe: (co) => callApi<BotUser>('getMe', {}, co),
    setWebhook: (params, co) => callApi<true>('setWebhook', params, co),
    deleteWebhook: (params, co) => callApi<true>('deleteWebhook', params ?? {}, co),
    getWebhookInfo: (co) => callApi<WebhookInfo>('getWebhookInfo', {}, co),
    close: () => agent.destroy(),
  };
  // util.inspect / JSON.stringify of the client must not reveal the token.
  Object.defineProperty(client, 'toJSON', { value: () => ({ botId, apiRoot: rootUrl.origin }), enumerable: false });
  return client;
}
