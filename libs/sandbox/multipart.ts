/**
 * A small multipart/form-data parser for the Bot API sandbox (Node has none built in for a server,
 * and the sandbox takes no dependency for it). Bounded: the body size is capped by the caller, the
 * number of parts and the size of a part's header block here, so a hostile body costs at most a
 * bounded amount of work and always ends in a 400 naming what is wrong.
 */
import { BotApiError } from './http-io';

/** One uploaded file (a part with a `filename`). */
export interface UploadedPart {
  /** The part's form name: an InputFile field (`photo`) or the name an `attach://<name>` refers to. */
  name: string;
  filename: string;
  contentType?: string;
  data: Buffer;
}

export interface MultipartBody {
  /** Text parts in body order (a repeated name: the last one wins when read into params). */
  fields: Array<[string, string]>;
  /** File parts by name. */
  files: Map<string, UploadedPart>;
}

export const MULTIPART_MAX_PARTS = 1000;
const MAX_HEADER_BLOCK = 16 * 1024;
const CRLF = Buffer.from('\r\n');
const HEADER_END = Buffer.from('\r\n\r\n');

function malformed(why: string): BotApiError {
  return new BotApiError(400, `Bad Request: can't parse multipart/form-data request: ${why}`);
}

/** The boundary of a `multipart/form-data; boundary=…` content type (quoted or not), or undefined. */
export function multipartBoundary(contentType: string | undefined): string | undefined {
  if (!contentType || !/^\s*multipart\/form-data\s*(;|$)/i.test(contentType)) return undefined;
  const m = /;\s*boundary=(?:"([^"]{1,200})"|([^\s;]{1,200}))/i.exec(contentType);
  return m ? (m[1] ?? m[2]) : '';
}

interface PartHeaders {
  name: string;
  filename?: string;
  contentType?: string;
}

/** A header parameter (`name="x"`, `filename=y`); quoted values may hold `\"` escapes. */
function headerParam(header: string, param: string): string | undefined {
  const re = new RegExp(`;\\s*${param}\\s*=\\s*(?:"((?:[^"\\\\]|\\\\.)*)"|([^;\\s]*))`, 'i');
  const m = re.exec(header);
  if (!m) return undefined;
  return m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : m[2];
}

function parseHeaders(block: string): PartHeaders {
  let disposition: string | undefined;
  let contentType: string | undefined;
  for (const line of block.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon <= 0) throw malformed('a part header line has no name');
    const key = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (key === 'content-disposition') disposition = value;
    else if (key === 'content-type') contentType = value;
  }
  if (!disposition || !/^form-data\s*(;|$)/i.test(disposition)) throw malformed('a part is not form-data');
  const name = headerParam(disposition, 'name');
  if (name === undefined || name === '') throw malformed('a part has no name');
  const out: PartHeaders = { name };
  const filename = headerParam(disposition, 'filename');
  if (filename !== undefined) out.filename = filename;
  if (contentType) out.contentType = contentType;
  return out;
}

/**
 * Split a multipart/form-data body. Throws a 400 BotApiError for a missing boundary, a body that
 * does not start with or never closes its delimiter, a part without a name, or too many parts.
 */
export function parseMultipart(body: Buffer, boundary: string): MultipartBody {
  if (!boundary) throw malformed('the boundary is missing');
  const delimiter = Buffer.from(`--${boundary}`);
  const next = Buffer.from(`\r\n--${boundary}`);
  const out: MultipartBody = { fields: [], files: new Map() };
  let pos = body.indexOf(delimiter);
  if (pos < 0) throw malformed('the boundary does not occur in the body');
  pos += delimiter.length;
  for (let parts = 0; ; parts++) {
    if (body.subarray(pos, pos + 2).toString('latin1') === '--') return out; // close delimiter
    if (!body.subarray(pos, pos + 2).equals(CRLF)) throw malformed('a delimiter is not followed by a line break');
    if (parts >= MULTIPART_MAX_PARTS) throw malformed(`more than ${MULTIPART_MAX_PARTS} parts`);
    pos += 2;
    const headerEnd = body.indexOf(HEADER_END, pos);
    if (headerEnd < 0 || headerEnd - pos > MAX_HEADER_BLOCK) throw malformed('a part has no end of headers');
    const headers = parseHeaders(body.subarray(pos, headerEnd).toString('utf8'));
    const start = headerEnd + HEADER_END.length;
    const end = body.indexOf(next, start);
    if (end < 0) throw malformed('the body ends inside a part (no closing delimiter)');
    const data = body.subarray(start, end);
    if (headers.filename !== undefined) {
      const file: UploadedPart = { name: headers.name, filename: headers.filename, data: Buffer.from(data) };
      if (headers.contentType) file.contentType = headers.contentType;
      out.files.set(headers.name, file);
    } else {
      out.fields.push([headers.name, data.toString('utf8')]);
    }
    pos = end + next.length;
  }
}
