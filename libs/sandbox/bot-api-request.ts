/**
 * The parameters and uploaded files of one Bot API request: JSON, form-encoded and query-string
 * parameters (http-io's parseParams) plus multipart/form-data, whose text parts are decoded like
 * form fields and whose file parts are kept for the method (`attach://<part>`) and the call log.
 */
import { createHash } from 'node:crypto';
import { decodeFormValue, parseParams } from './http-io';
import { multipartBoundary, parseMultipart, type UploadedPart } from './multipart';
import type { CallFileRecord } from './types';

/** Telegram accepts uploads of up to 50 MB; the body bound leaves room for the other parts. */
export const MULTIPART_MAX_BODY_BYTES = 60 * 1024 * 1024;

/** Bytes of one upload the call log keeps by default (sha256 and size are always kept). */
export const DEFAULT_MAX_RECORDED_FILE_BYTES = 1024 * 1024;

export interface BotApiRequest {
  params: Record<string, unknown>;
  files: Map<string, UploadedPart>;
  /** For the call record; undefined when the request carried no file. */
  fileRecords?: CallFileRecord[];
}

export function isMultipart(contentType: string | undefined): boolean {
  return multipartBoundary(contentType) !== undefined;
}

export function parseBotApiRequest(
  url: URL,
  contentType: string | undefined,
  body: Buffer,
  maxRecordedFileBytes = DEFAULT_MAX_RECORDED_FILE_BYTES,
): BotApiRequest {
  const boundary = multipartBoundary(contentType);
  if (boundary === undefined) return { params: parseParams(url, contentType, body), files: new Map() };
  const params = parseParams(url, undefined, Buffer.alloc(0));
  if (body.length === 0) return { params, files: new Map() };
  const parsed = parseMultipart(body, boundary);
  for (const [k, v] of parsed.fields) params[k] = decodeFormValue(k, v);
  if (parsed.files.size === 0) return { params, files: parsed.files };
  const fileRecords = [...parsed.files.values()].map((f) => fileRecord(f, maxRecordedFileBytes));
  return { params, files: parsed.files, fileRecords };
}

export function sha256Hex(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

function fileRecord(f: UploadedPart, maxBytes: number): CallFileRecord {
  const r: CallFileRecord = { part: f.name, filename: f.filename, size: f.data.length, sha256: sha256Hex(f.data) };
  if (f.contentType) r.content_type = f.contentType;
  if (f.data.length <= maxBytes) r.data_base64 = f.data.toString('base64');
  else r.truncated = true;
  return r;
}
