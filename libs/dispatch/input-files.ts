/**
 * The files a relayed call uploads (REPLY_MODE=outbound). telegraf hands `callApi` the handler's
 * InputFile objects as they are (`Input.fromBuffer/fromReadableStream/fromLocalFile` give
 * `{ source, filename? }`, `Input.fromURLStream` gives `{ url, filename? }`), and would read them
 * only when it sends. A relayed call is sent later by another process, so its files are read now:
 * into bytes stored with the outbound row, each referred to from the parameters as `attach://fileN`.
 * A URL object becomes the URL string (Telegram fetches it). What cannot be read (a stream that
 * fails, a path that is not a file, a getter that throws) or is too big is refused at the call.
 *
 * The places looked at are telegraf's: top-level fields, and the `media`/`thumbnail` of `media[]`
 * entries (sendMediaGroup) and of a top-level InputMedia object (editMessageMedia).
 */
import { stat, readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { errorCode } from '../errors/thrown';
import { unicodeProblem } from '../outbound/message';
import { abortReason } from './errors';
import type { OutboundUpload } from './reply-sink';

/** A reason a call's file cannot be relayed; the sink turns it into InvalidReplyError. */
export class UploadProblem extends Error {
  constructor(
    readonly field: string,
    readonly problem: string,
  ) {
    super(`${field} ${problem}`);
    this.name = 'UploadProblem';
  }
}

export interface ReadFilesOptions {
  /** OUTBOUND_MAX_UPLOAD: the bytes all files of the call may total. */
  maxBytes: number;
  /** The attempt's signal: a read still running when the attempt ends is abandoned. */
  signal: AbortSignal;
}

/** telegraf's default file names: `<field>.<ext>` (photo.jpg), `.dat` for anything else. */
const DEFAULT_EXTENSIONS: Record<string, string> = {
  audio: 'mp3',
  photo: 'jpg',
  sticker: 'webp',
  video: 'mp4',
  animation: 'mp4',
  video_note: 'mp4',
  voice: 'ogg',
};

const THUMBNAIL_FIELDS = ['thumbnail', 'thumb'] as const;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * `{ source, … }` or `{ url, filename? }`: an InputFile. The URL form needs exactly those keys, so an
 * InlineQueryResult with a `url` (answerWebAppQuery's `result`) is not taken for one.
 */
function isInputFile(v: unknown): v is Record<string, unknown> {
  if (!isObject(v) || Buffer.isBuffer(v)) return false;
  if (Object.hasOwn(v, 'source')) return true;
  return Object.hasOwn(v, 'url') && Object.keys(v).every((k) => k === 'url' || k === 'filename');
}

/** An InputMedia (`{ type, media, thumbnail? }`) whose media or thumbnail is a file. */
function isInputMedia(v: unknown): v is Record<string, unknown> {
  return isObject(v) && 'type' in v && (isInputFile(v.media) || THUMBNAIL_FIELDS.some((f) => isInputFile(v[f])));
}

/**
 * A copy of `payload` with every InputFile replaced by `attach://fileN` (or its URL), and the files'
 * bytes. Throws UploadProblem, or the attempt's abort reason when it ends during a read.
 */
export async function readInputFiles(
  payload: Record<string, unknown>,
  opts: ReadFilesOptions,
): Promise<{ payload: Record<string, unknown>; uploads: OutboundUpload[] }> {
  const reader = new FileReader(opts);
  // entries, not assignments: a `__proto__` key stays a field (as JSON would carry it)
  const out: [string, unknown][] = [];
  for (const [key, value] of Object.entries(payload)) {
    if (key === 'link_preview_options') out.push([key, value]);
    else if (isInputFile(value)) out.push([key, await reader.attach(value, key, key)]);
    else if (Array.isArray(value)) out.push([key, await reader.mediaList(value, key)]);
    else if (isInputMedia(value)) out.push([key, await reader.media(value, key)]);
    else out.push([key, value]);
  }
  return { payload: Object.fromEntries(out), uploads: reader.uploads };
}

class FileReader {
  readonly uploads: OutboundUpload[] = [];
  private total = 0;

  constructor(private readonly opts: ReadFilesOptions) {}

  async mediaList(list: unknown[], key: string): Promise<unknown[]> {
    const out: unknown[] = [];
    for (const [i, item] of list.entries())
      out.push(isInputMedia(item) ? await this.media(item, `${key}[${i}]`) : item);
    return out;
  }

  async media(item: Record<string, unknown>, path: string): Promise<Record<string, unknown>> {
    const out: Record<string, unknown> = { ...item };
    const type = typeof item.type === 'string' ? item.type : 'media';
    if (isInputFile(item.media)) out.media = await this.attach(item.media, `${path}.media`, type);
    for (const f of THUMBNAIL_FIELDS)
      if (isInputFile(item[f])) out[f] = await this.attach(item[f], `${path}.${f}`, 'thumbnail');
    return out;
  }

  /** One InputFile: read, counted against the limit, named `fileN`; returns what the params say instead. */
  async attach(file: Record<string, unknown>, path: string, kind: string): Promise<string> {
    if (!Object.hasOwn(file, 'source')) {
      if (typeof file.url === 'string' && file.url !== '') return file.url;
      throw new UploadProblem(path, 'must have a url string or a source (a Buffer, a readable stream or a file path)');
    }
    const { source } = file;
    const room = this.opts.maxBytes - this.total;
    let bytes: Buffer;
    let fallbackName = `${kind}.${DEFAULT_EXTENSIONS[kind] ?? 'dat'}`;
    if (Buffer.isBuffer(source) || source instanceof Uint8Array) {
      bytes = Buffer.from(source); // a copy: the call sends what the buffer held when it was made
      if (bytes.length > room) throw this.overLimit(path);
    } else if (typeof source === 'string' && source !== '') {
      bytes = await this.readPath(source, path, room);
      fallbackName = basename(source);
    } else if (isReadable(source)) {
      bytes = await this.readStream(source, path, room);
    } else {
      throw new UploadProblem(path, 'source must be a Buffer, a readable stream or a file path');
    }
    if (bytes.length === 0) throw new UploadProblem(path, 'is empty (Telegram refuses empty files)');
    this.total += bytes.length;
    const filename = filenameOf(file.filename, fallbackName, path);
    const part = `file${this.uploads.length + 1}`;
    this.uploads.push({ part, filename, bytes });
    return `attach://${part}`;
  }

  private overLimit(path: string): UploadProblem {
    return new UploadProblem(
      path,
      `is over the upload limit: the files of one call may total ${this.opts.maxBytes} bytes (OUTBOUND_MAX_UPLOAD)`,
    );
  }

  private async readPath(file: string, path: string, room: number): Promise<Buffer> {
    let bytes: Buffer;
    try {
      const info = await stat(file);
      if (!info.isFile()) throw new UploadProblem(path, 'source names a path that is not a file');
      if (info.size > room) throw this.overLimit(path);
      bytes = await readFile(file, { signal: this.opts.signal });
    } catch (err) {
      if (this.opts.signal.aborted) throw abortReason(this.opts.signal);
      if (err instanceof UploadProblem) throw err;
      throw new UploadProblem(path, `source file cannot be read (${errorCode(err) ?? errorName(err)})`);
    }
    if (bytes.length > room) throw this.overLimit(path); // it grew between stat and read
    return bytes;
  }

  /** Reads a stream to its end, stopping (and destroying it) once it passes the room left. */
  private async readStream(source: AsyncIterable<unknown>, path: string, room: number): Promise<Buffer> {
    const { signal } = this.opts;
    const iterator = source[Symbol.asyncIterator]();
    let onAbort: (() => void) | undefined;
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => reject(abortReason(signal));
      signal.addEventListener('abort', onAbort, { once: true });
    });
    aborted.catch(() => undefined);
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    try {
      if (signal.aborted) throw abortReason(signal);
      for (;;) {
        const next = await Promise.race([iterator.next(), aborted]);
        if (next.done) break;
        const chunk = chunkBytes(next.value, path);
        size += chunk.length;
        if (size > room) throw this.overLimit(path);
        chunks.push(chunk);
      }
      done = true;
    } catch (err) {
      if (signal.aborted) throw abortReason(signal);
      if (err instanceof UploadProblem) throw err;
      throw new UploadProblem(path, `source stream failed (${errorCode(err) ?? errorName(err)})`);
    } finally {
      if (onAbort) signal.removeEventListener('abort', onAbort);
      if (!done) stopReading(source, iterator);
    }
    return Buffer.concat(chunks);
  }
}

/**
 * Ends a stream left unfinished (over the limit, failed, abandoned). A Node stream is destroyed:
 * its iterator's `return()` would wait for the read still pending, which may never come.
 */
function stopReading(source: object, iterator: AsyncIterator<unknown>): void {
  const destroy: unknown = Reflect.get(source, 'destroy');
  if (typeof destroy === 'function') {
    Reflect.apply(destroy, source, []);
    return;
  }
  // its own error is no longer ours
  Promise.resolve()
    .then(() => iterator.return?.())
    .catch(() => undefined);
}

/** A Node Readable, a web ReadableStream or any async iterable of bytes. */
function isReadable(v: unknown): v is AsyncIterable<unknown> {
  return typeof v === 'object' && v !== null && Symbol.asyncIterator in v;
}

function chunkBytes(chunk: unknown, path: string): Buffer {
  if (Buffer.isBuffer(chunk)) return chunk;
  if (chunk instanceof Uint8Array) return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  if (typeof chunk === 'string') return Buffer.from(chunk);
  throw new UploadProblem(path, 'source stream gave something other than bytes (an object-mode stream?)');
}

function filenameOf(given: unknown, fallback: string, path: string): string {
  const name = typeof given === 'string' && given !== '' ? given : fallback;
  const u = unicodeProblem(name);
  if (u) throw new UploadProblem(path, `filename ${u}`);
  return name;
}

function errorName(err: unknown): string {
  return err instanceof Error ? err.name : typeof err;
}
