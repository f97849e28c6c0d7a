/** Request parsing and response writing for the sandbox servers (Node's `http` only). */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ErrorEnvelope, ResponseParameters } from './types';

const MAX_BODY_BYTES = 20 * 1024 * 1024;

/** An error answered with the Bot API envelope and HTTP status = error_code. */
export class BotApiError extends Error {
  constructor(
    readonly errorCode: number,
    readonly description: string,
    readonly parameters?: ResponseParameters,
  ) {
    super(description);
    this.name = 'BotApiError';
  }

  envelope(): ErrorEnvelope {
    const e: ErrorEnvelope = { ok: false, error_code: this.errorCode, description: this.description };
    if (this.parameters) e.parameters = this.parameters;
    return e;
  }
}

export function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY_BYTES) {
        reject(new BotApiError(413, 'Request Entity Too Large'));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** Fields that clients send JSON-serialised when they use form encoding or the query string. */
const JSON_FIELDS = new Set([
  'reply_markup',
  'reply_parameters',
  'allowed_updates',
  'entities',
  'link_preview_options',
  'media',
  'message_ids',
  'results',
  'options',
  'prices',
  'reaction',
]);

/** A file part of a multipart/form-data request. */
export interface UploadedPart {
  part: string;
  filename: string;
  bytes: Buffer;
}

/**
 * multipart/form-data, the way Telegram reads it: fields are strings (known JSON fields parsed),
 * parts with a filename are files. Malformed bodies are a 400, as Telegram answers them.
 */
export function parseMultipart(
  contentType: string,
  body: Buffer,
): { params: Record<string, unknown>; files: UploadedPart[] } {
  const m = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  if (!m) throw new BotApiError(400, 'Bad Request: multipart boundary not found');
  const delimiter = Buffer.from(`--${m[1] ?? m[2]}`);
  const params: Record<string, unknown> = {};
  const files: UploadedPart[] = [];
  let at = body.indexOf(delimiter);
  while (at >= 0) {
    const start = at + delimiter.length;
    if (body.subarray(start, start + 2).toString() === '--') break;
    const next = body.indexOf(delimiter, start);
    if (next < 0) throw new BotApiError(400, 'Bad Request: multipart body is truncated');
    const part = body.subarray(start + 2, next - 2); // after CRLF, before the CRLF that precedes the delimiter
    const split = part.indexOf('\r\n\r\n');
    if (split < 0) throw new BotApiError(400, 'Bad Request: multipart part without headers');
    const headers = part.subarray(0, split).toString('utf8');
    const content = part.subarray(split + 4);
    const name = /name="([^"]*)"/i.exec(headers)?.[1];
    const filename = /filename="([^"]*)"/i.exec(headers)?.[1];
    if (name !== undefined) {
      if (filename !== undefined) files.push({ part: name, filename, bytes: Buffer.from(content) });
      else params[name] = decodeFormValue(name, content.toString('utf8'));
    }
    at = next;
  }
  return { params, files };
}

/**
 * Bot API parameters from the query string and the body (JSON or application/x-www-form-urlencoded),
 * the body winning. Form/query values are strings, except known JSON fields which are parsed.
 */
export function parseParams(url: URL, contentType: string | undefined, body: Buffer): Record<string, unknown> {
  const params: Record<string, unknown> = {};
  for (const [k, v] of url.searchParams) params[k] = decodeFormValue(k, v);
  const ct = (contentType ?? '').toLowerCase();
  if (body.length === 0) return params;
  if (ct.includes('application/json')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch {
      throw new BotApiError(400, "Bad Request: can't parse JSON object");
    }
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) Object.assign(params, parsed);
  } else if (ct.includes('multipart/form-data')) {
    Object.assign(params, parseMultipart(ct, body).params);
  } else if (ct.includes('application/x-www-form-urlencoded')) {
    for (const [k, v] of new URLSearchParams(body.toString('utf8'))) params[k] = decodeFormValue(k, v);
  }
  return params;
}

function decodeFormValue(key: string, value: string): unknown {
  if (!JSON_FIELDS.has(key)) return value;
  try {
    return JSON.parse(value);
  } catch {
    return value; // validated by the method
  }
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

/** Parse an integer parameter the way the Bot API does: strings of digits accepted, junk → fallback. */
export function intParam(value: unknown, fallback: number): number {
  if (typeof value === 'number' && Number.isFinite(value)) return Math.trunc(value);
  if (typeof value === 'string' && /^\s*-?\d+\s*$/.test(value)) return Number.parseInt(value, 10);
  return fallback;
}

/** A parameter as text: strings as they are, other scalars as String() writes them, lists and objects as JSON. */
export function textParam(value: unknown): string {
  if (typeof value === 'string') return value;
  if (
    typeof value === 'number' ||
    typeof value === 'boolean' ||
    typeof value === 'bigint' ||
    value === null ||
    value === undefined
  )
    return String(value);
  return JSON.stringify(value) ?? '';
}

export function boolParam(value: unknown): boolean {
  return value === true || value === 'true' || value === 1 || value === '1';
}

export function clamp(n: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, n));
}

/** A chat id the way the Bot API accepts it: an integer (or digits) or an `@channelusername`. */
export function chatIdParam(value: unknown): number | string | undefined {
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  if (typeof value === 'string') {
    const s = value.trim();
    if (/^-?\d+$/.test(s)) return Number.parseInt(s, 10);
    if (/^@[A-Za-z0-9_]{1,64}$/.test(s)) return s;
  }
  return undefined;
}

/** Control API parameters: the query string merged with a JSON object body. Throws on a bad body. */
export async function readControlParams(req: IncomingMessage, url: URL): Promise<Record<string, unknown>> {
  const params: Record<string, unknown> = Object.fromEntries(url.searchParams);
  const body = await readBody(req);
  if (body.length === 0) return params;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    throw new Error('body must be JSON');
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('body must be a JSON object');
  return Object.assign(params, parsed);
}
