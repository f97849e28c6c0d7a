/**
 * The rules of a relayed Bot API call other than sendMessage (libs/telegram/methods.ts): its
 * parameters, the files it uploads and the placeholders it resolved with. Checked minimally — what
 * makes a call certain to fail (a required parameter missing, a text or caption Telegram refuses, a
 * file the call names but does not carry) fails its own row at once with the field named; the rest
 * is Telegram's to judge. relay.outbound_upsert re-checks the core (method, params shape, chat_id).
 */
import { TELEGRAM_CAPTION_MAX, TELEGRAM_UPLOAD_MAX } from '../telegram/limits';
import { isPlaceholder } from '../telegram/placeholders';
import type { OutboundProblem } from './errors';
import { charLength, jsonValueProblem, outboundTextProblem, unicodeProblem } from './text-rules';

/** JSON size of `params`, UTF-8 bytes (answerInlineQuery's 50 results fit; relay.outbound_upsert backstops it). */
export const OUTBOUND_PARAMS_MAX_BYTES = 256 * 1024;
export { TELEGRAM_CAPTION_MAX };
/** One uploaded file: the Bot API's limit for bots. */
export const OUTBOUND_UPLOAD_MAX_BYTES = TELEGRAM_UPLOAD_MAX;
/** Messages one call may send (sendMediaGroup 10, forwardMessages/copyMessages 100). */
export const OUTBOUND_MESSAGE_COUNT_MAX = 100;
/** The multipart part name of an upload, as `attach://<part>` names it (relay.outbound_uploads.part). */
export const UPLOAD_PART = /^[A-Za-z0-9_-]{1,64}$/;

/** A file a relayed call uploads (the shape of libs/dispatch's OutboundUpload). */
export interface UploadedFile {
  part: string;
  filename: string;
  bytes: Buffer;
}

/** Parameters a call cannot go without: a name, or a list of names of which one is needed. */
type Required = (string | readonly string[])[];
const TARGET = ['message_id', 'inline_message_id'] as const;

const REQUIRED: Record<string, Required> = {
  forwardMessage: ['from_chat_id', 'message_id'],
  forwardMessages: ['from_chat_id', 'message_ids'],
  copyMessage: ['from_chat_id', 'message_id'],
  copyMessages: ['from_chat_id', 'message_ids'],
  sendPhoto: ['photo'],
  sendAudio: ['audio'],
  sendDocument: ['document'],
  sendVideo: ['video'],
  sendAnimation: ['animation'],
  sendVoice: ['voice'],
  sendVideoNote: ['video_note'],
  sendMediaGroup: ['media'],
  sendLocation: ['latitude', 'longitude'],
  sendVenue: ['latitude', 'longitude', 'title', 'address'],
  sendContact: ['phone_number', 'first_name'],
  sendPoll: ['question', 'options'],
  sendSticker: ['sticker'],
  sendInvoice: ['title', 'description', 'payload', 'currency', 'prices'],
  sendGame: ['game_short_name'],
  editMessageText: ['text', TARGET],
  editMessageCaption: [TARGET],
  editMessageMedia: ['media', TARGET],
  editMessageReplyMarkup: [TARGET],
  editMessageLiveLocation: ['latitude', 'longitude', TARGET],
  stopMessageLiveLocation: [TARGET],
  stopPoll: ['message_id'],
  setGameScore: ['user_id', 'score', TARGET],
  deleteMessage: ['message_id'],
  deleteMessages: ['message_ids'],
  pinChatMessage: ['message_id'],
  setMessageReaction: ['message_id'],
  answerCallbackQuery: ['callback_query_id'],
  answerInlineQuery: ['inline_query_id', 'results'],
  answerPreCheckoutQuery: ['pre_checkout_query_id', 'ok'],
  answerShippingQuery: ['shipping_query_id', 'ok'],
  answerWebAppQuery: ['web_app_query_id', 'result'],
};

const given = (params: Record<string, unknown>, key: string): boolean =>
  Object.hasOwn(params, key) && params[key] !== undefined && params[key] !== null;

const noParseMode = (obj: Record<string, unknown>): boolean =>
  obj.parse_mode === undefined || obj.parse_mode === null || obj.parse_mode === '';

function captionProblem(caption: unknown, plain: boolean): string | undefined {
  if (caption === undefined || caption === null) return undefined;
  if (typeof caption !== 'string') return 'must be a string';
  const u = unicodeProblem(caption);
  if (u) return u;
  const n = charLength(caption);
  if (plain && n > TELEGRAM_CAPTION_MAX) return `must be at most ${TELEGRAM_CAPTION_MAX} characters, got ${n}`;
  return undefined;
}

/** Every "attach://<part>" string in a value (top-level fields like `photo`, and inside `media[]`). */
export function attachedParts(value: unknown, out = new Set<string>(), depth = 0): Set<string> {
  if (typeof value === 'string') {
    if (value.startsWith('attach://')) out.add(value.slice('attach://'.length));
  } else if (value !== null && typeof value === 'object' && depth < 8) {
    for (const v of Object.values(value as Record<string, unknown>)) attachedParts(v, out, depth + 1);
  }
  return out;
}

function textProblems(method: string, params: Record<string, unknown>, bad: (f: string, p: string) => void): void {
  if (method === 'editMessageText' && given(params, 'text')) {
    const text = params.text;
    if (noParseMode(params)) {
      const p = outboundTextProblem(text);
      if (p) bad('params.text', p);
    } else if (typeof text !== 'string' || !/\S/.test(text))
      bad('params.text', 'must be a string with a visible character');
    else if (unicodeProblem(text)) bad('params.text', unicodeProblem(text) as string);
  }
  const cap = captionProblem(params.caption, noParseMode(params));
  if (cap) bad('params.caption', cap);
  const media = params.media;
  if (Array.isArray(media)) {
    media.forEach((item: unknown, i) => {
      if (item === null || typeof item !== 'object') return;
      const obj = item as Record<string, unknown>;
      const p = captionProblem(obj.caption, noParseMode(obj));
      if (p) bad(`params.media[${i}].caption`, p);
    });
  }
}

function paramsSizeProblem(params: Record<string, unknown>): string | undefined {
  let json: string | undefined;
  try {
    json = JSON.stringify(params);
  } catch {
    return 'cannot be converted to JSON';
  }
  const bytes = Buffer.byteLength(json ?? '');
  return bytes > OUTBOUND_PARAMS_MAX_BYTES
    ? `must be at most ${OUTBOUND_PARAMS_MAX_BYTES} bytes as JSON, got ${bytes}`
    : undefined;
}

/**
 * The problems of a relayed call's `params` (a method other than sendMessage), each with its field.
 * Never throws: any value (an HTTP body, a handler's arguments) gets problems, not an exception.
 */
export function methodParamsProblems(method: string, params: unknown): OutboundProblem[] {
  const problems: OutboundProblem[] = [];
  const bad = (field: string, problem: string) => problems.push({ field, problem });
  if (params === null || typeof params !== 'object' || Array.isArray(params)) {
    bad('params', `must be a JSON object of the ${method} parameters (all but chat_id)`);
    return problems;
  }
  const p = params as Record<string, unknown>;
  if (Object.hasOwn(p, 'chat_id')) bad('params', 'must not contain chat_id (it has its own field)');
  const json = jsonValueProblem(p);
  if (json) {
    bad('params', json);
    return problems;
  }
  const size = paramsSizeProblem(p);
  if (size) bad('params', size);
  for (const req of REQUIRED[method] ?? []) {
    if (typeof req === 'string') {
      if (!given(p, req)) bad(`params.${req}`, `is required for ${method}`);
    } else if (!req.some((k) => given(p, k)))
      bad(`params.${req.join('|')}`, `one of ${req.join(', ')} is required for ${method}`);
  }
  for (const list of ['media', 'message_ids'] as const) {
    const v = p[list];
    if (Array.isArray(v) && v.length > OUTBOUND_MESSAGE_COUNT_MAX)
      bad(`params.${list}`, `must have at most ${OUTBOUND_MESSAGE_COUNT_MAX} items, got ${v.length}`);
  }
  textProblems(method, p, bad);
  return problems;
}

/** Problems of the files a call uploads: well-formed, bounded, each named by the params that need it. */
export function uploadProblems(uploads: unknown, params: unknown): OutboundProblem[] {
  const problems: OutboundProblem[] = [];
  const bad = (field: string, problem: string) => problems.push({ field, problem });
  const list: unknown[] = uploads === undefined || uploads === null ? [] : Array.isArray(uploads) ? uploads : [uploads];
  if (uploads !== undefined && uploads !== null && !Array.isArray(uploads)) {
    bad('uploads', 'must be a list of { part, filename, bytes }');
    return problems;
  }
  const parts = new Set<string>();
  list.forEach((u, i) => {
    const f = `uploads[${i}]`;
    if (u === null || typeof u !== 'object') return bad(f, 'must be { part, filename, bytes }');
    const { part, filename, bytes } = u as Record<string, unknown>;
    if (typeof part !== 'string' || !UPLOAD_PART.test(part))
      bad(`${f}.part`, 'must be 1-64 characters of A-Z, a-z, 0-9, _ and -');
    else if (parts.has(part)) bad(`${f}.part`, `"${part}" is given twice`);
    else parts.add(part);
    if (
      typeof filename !== 'string' ||
      charLength(filename) < 1 ||
      charLength(filename) > 256 ||
      unicodeProblem(filename)
    )
      bad(`${f}.filename`, 'must be a string of 1..256 characters (valid Unicode, no NUL)');
    if (!(bytes instanceof Uint8Array)) bad(`${f}.bytes`, 'must be a Buffer');
    else if (bytes.byteLength > OUTBOUND_UPLOAD_MAX_BYTES)
      bad(`${f}.bytes`, `must be at most ${OUTBOUND_UPLOAD_MAX_BYTES} bytes, got ${bytes.byteLength}`);
  });
  for (const ref of attachedParts(params)) {
    if (!parts.has(ref)) bad('params', `names "attach://${ref.slice(0, 64)}" but no upload has that part`);
  }
  return problems;
}

/** Problems of the placeholder ids a call resolved with (libs/telegram/placeholders.ts). */
export function placeholderProblems(placeholders: unknown): OutboundProblem[] {
  if (placeholders === undefined || placeholders === null) return [];
  if (
    !Array.isArray(placeholders) ||
    placeholders.length > OUTBOUND_MESSAGE_COUNT_MAX ||
    !placeholders.every((p) => isPlaceholder(p))
  )
    return [
      {
        field: 'placeholders',
        problem: `must be a list of at most ${OUTBOUND_MESSAGE_COUNT_MAX} placeholder message ids (libs/telegram/placeholders.ts)`,
      },
    ];
  return [];
}
