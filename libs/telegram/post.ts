/**
 * One Bot API request over HTTP: a JSON POST (multipart/form-data when it uploads files) on a keep-alive agent, bounded by a timeout and an
 * AbortSignal, its answer read whole (up to a size no Bot API answer reaches). Nothing is read from
 * the body here (libs/telegram/envelope.ts does that); a request that produced no answer is a
 * `TelegramNetworkError`.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { TelegramNetworkError } from './errors';
import type { HttpAnswer } from './envelope';

/** Bot API answers are small; anything bigger is not a Bot API answer. */
const MAX_RESPONSE_BYTES = 64 * 1024 * 1024;

export interface PostTarget {
  transport: typeof http | typeof https;
  agent: http.Agent;
  url: URL;
}

/** A file sent as a multipart part; the call's params name it `"attach://<part>"`. */
export interface MultipartFile {
  part: string;
  filename: string;
  bytes: Buffer;
}

/** A header parameter value that cannot end the quoted string or the header line. */
const quoted = (s: string): string => s.replace(/["\\\r\n]/g, '_');

/**
 * multipart/form-data as the Bot API reads it: each parameter a field (strings as they are, every
 * other value JSON-encoded: numbers, booleans, reply_markup, media[]), each file a part under its
 * name. The boundary is random, so no file's bytes can contain it by accident (2^-128).
 */
export function multipartBody(
  params: Record<string, unknown>,
  files: readonly MultipartFile[],
): { body: Buffer; contentType: string } {
  const boundary = `tg-relay-${randomBytes(16).toString('hex')}`;
  const chunks: Buffer[] = [];
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined || value === null) continue;
    const text = typeof value === 'string' ? value : JSON.stringify(value);
    chunks.push(
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${quoted(key)}"\r\n\r\n${text}\r\n`, 'utf8'),
    );
  }
  for (const f of files) {
    chunks.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${quoted(f.part)}"; filename="${quoted(f.filename)}"\r\n` +
          'Content-Type: application/octet-stream\r\n\r\n',
        'utf8',
      ),
      f.bytes,
      Buffer.from('\r\n', 'utf8'),
    );
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`, 'utf8'));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

export function postBotApi(
  target: PostTarget,
  method: string,
  params: Record<string, unknown> | undefined,
  co: { signal?: AbortSignal; timeoutMs: number; files?: readonly MultipartFile[] },
): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    if (co.signal?.aborted) {
      reject(new TelegramNetworkError(method, 'aborted', 'request aborted', false));
      return;
    }
    const { body: payload, contentType } = co.files?.length
      ? multipartBody(params ?? {}, co.files)
      : { body: JSON.stringify(params ?? {}), contentType: 'application/json' };
    let settled = false;
    let requestSent = false;
    const req = target.transport.request(target.url, {
      method: 'POST',
      agent: target.agent,
      headers: {
        'content-type': contentType,
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
    const timeoutMs = co.timeoutMs;
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
