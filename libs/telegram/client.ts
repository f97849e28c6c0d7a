/**
 * A small Bot API client: `callApi(method, params, { signal, timeoutMs })` over keep-alive HTTP,
 * JSON bodies, typed errors (libs/telegram/errors.ts). No retries here: callers decide (the poller
 * backs off, the outbound worker classifies). The token is only ever part of the request path and
 * never appears in an error, a log line or `toString()` of the client.
 */
import http from 'node:http';
import https from 'node:https';
import { TelegramApiError, TelegramNetworkError, ResponseParameters } from './errors';

export const TELEGRAM_CALL_TIMEOUT_MS_DEFAULT = 30_000;
/** Bot API answers are small; anything bigger is not a Bot API answer. */
const MAX_RESPONSE_BYTES = 64 * 1024 * 1024;

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

  function send(
    method: string,
    params: Record<string, unknown> | undefined,
    co: CallOptions = {},
  ): Promise<{ status: number; body: string; retryAfterHeader?: number }> {
    return new Promise((resolve, reject) => {
      if (co.signal?.aborted) {
        reject(new TelegramNetworkError(method, 'aborted', 'request aborted', false));
        return;
      }
      const payload = JSON.stringify(params ?? {});
      let settled = false;
      let requestSent = false;
      const req = transport.request(urlFor(method), {
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
          accept: 'application/json',
        },
      });
      const cleanup = () => {
        clearTimeout(timer);
        co.signal?.removeEventListener('abort', onAbort);
      };
      const fail = (reason: TelegramNetworkError['reason'], message: string, cause?: unknown) => {
        if (settled) return;
        settled = true;
        cleanup();
        req.destroy();
        reject(new TelegramNetworkError(method, reason, message, requestSent, { cause }));
      };
      const timeoutMs = co.timeoutMs ?? defaultTimeout;
      const timer = setTimeout(() => fail('timeout', `no answer within ${timeoutMs} ms`), timeoutMs);
      const onAbort = () => fail('aborted', 'request aborted');
      co.signal?.addEventListener('abort', onAbort, { once: true });
      req.on('finish', () => {
        requestSent = true;
      });
      req.on('error', (err) => fail('connection', err.message, err));
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > MAX_RESPONSE_BYTES) fail('bad_response', `answer larger than ${MAX_RESPONSE_BYTES} bytes`);
          else chunks.push(c);
        });
        res.on('error', (err) => fail('connection', err.message, err));
        res.on('aborted', () => fail('connection', 'connection closed while reading the answer'));
        res.on('end', () => {
          if (settled) return;
          settled = true;
          cleanup();
          const header = res.headers['retry-after'];
          const ra = typeof header === 'string' && /^\d+$/.test(header.trim()) ? Number(header.trim()) : undefined;
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), retryAfterHeader: ra });
        });
      });
      req.end(payload);
    });
  }

  function apiError(method: string, status: number, body: string, retryAfterHeader?: number): TelegramApiError {
    let env: { ok?: unknown; error_code?: unknown; description?: unknown; parameters?: unknown } | undefined;
    try {
      env = JSON.parse(body) as typeof env; // every field is checked before use
    } catch {
      env = undefined;
    }
    const errorCode = typeof env?.error_code === 'number' ? env.error_code : status;
    const description =
      typeof env?.description === 'string'
        ? env.description
        : `HTTP ${status} ${http.STATUS_CODES[status] ?? ''}`.trim();
    const parameters =
      env?.parameters && typeof env.parameters === 'object' ? (env.parameters as ResponseParameters) : undefined;
    return new TelegramApiError(method, { errorCode, description, parameters, retryAfterHeader });
  }

  async function callApiRaw(method: string, params?: Record<string, unknown>, co?: CallOptions): Promise<RawAnswer> {
    const r = await send(method, params, co);
    if (r.status < 200 || r.status >= 300) throw apiError(method, r.status, r.body, r.retryAfterHeader);
    return { status: r.status, body: r.body };
  }

  async function callApi<T>(method: string, params?: Record<string, unknown>, co?: CallOptions): Promise<T> {
    const r = await send(method, params, co);
    if (r.status < 200 || r.status >= 300) throw apiError(method, r.status, r.body, r.retryAfterHeader);
    let env: { ok?: unknown; result?: unknown };
    try {
      env = JSON.parse(r.body) as typeof env; // `ok` is checked before use
    } catch (err) {
      throw new TelegramNetworkError(method, 'bad_response', `HTTP ${r.status} answer is not JSON`, true, {
        cause: err,
      });
    }
    if (env?.ok !== true) throw apiError(method, r.status, r.body, r.retryAfterHeader);
    return env.result as T;
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
