/**
 * Media sends (sendPhoto, sendDocument, sendVideo, sendAudio, sendAnimation, sendVoice, sendSticker),
 * albums (sendMediaGroup) and the other content sends (sendLocation, sendContact, sendPoll, sendDice),
 * with the Bot API server's error texts (telegram-bot-api Client.cpp) where it has them.
 */
import { TELEGRAM_CAPTION_MAX } from '../telegram/limits';
import type { BotState, StoredFile } from './bot-state';
import { TG_DESCRIPTIONS } from './constants';
import { mediaLabel, postMessage, preflight, sendTarget } from './deliver';
import { BotApiError, intParam, textParam } from './http-io';
import { fileObject, inputFileSource, materialize, photoSizes, type FileSource } from './input-files';
import { parseModeParam, visibleText, type MessagingEnv } from './messaging';
import type { RequestScope } from './methods';
import type { TgMessage } from './types';

/** Telegram's caption limit (UTF-16 units after entity parsing). */
export const MAX_CAPTION_LENGTH = TELEGRAM_CAPTION_MAX;
const ALBUM_MIN = 2;
const ALBUM_MAX = 10;

type Params = Record<string, unknown>;

export interface Caption {
  caption?: string;
  parseMode?: string;
}

export function captionOf(params: Params): Caption {
  const parseMode = parseModeParam(params.parse_mode);
  const raw = params.caption;
  if (raw === undefined || raw === null || raw === '') return parseMode ? { parseMode } : {};
  const caption = textParam(raw);
  if (visibleText(caption, parseMode).length > MAX_CAPTION_LENGTH)
    throw new BotApiError(400, TG_DESCRIPTIONS.captionTooLong);
  return parseMode ? { caption, parseMode } : { caption };
}

/** The message fields of one kind of file (`photo: PhotoSize[]`, `document: Document`, …). */
export function fileContent(bot: BotState, kind: string, file: StoredFile, params: Params): Params {
  const duration = intParam(params.duration, 0);
  switch (kind) {
    case 'photo':
      return { photo: photoSizes(bot, file) };
    case 'video':
      return {
        video: fileObject(file, {
          width: intParam(params.width, 1280),
          height: intParam(params.height, 720),
          duration,
        }),
      };
    case 'animation': {
      const dims = { width: intParam(params.width, 320), height: intParam(params.height, 240), duration };
      // Telegram sends an animation's message with `document` too, for older clients
      return { animation: fileObject(file, dims), document: fileObject(file) };
    }
    case 'audio': {
      const extra: Params = { duration };
      if (typeof params.title === 'string') extra.title = params.title;
      if (typeof params.performer === 'string') extra.performer = params.performer;
      return { audio: fileObject(file, extra) };
    }
    case 'voice':
      return { voice: fileObject(file, { duration }) };
    case 'sticker':
      return {
        sticker: fileObject(file, { type: 'regular', width: 512, height: 512, is_animated: false, is_video: false }),
      };
    default:
      return { document: fileObject(file) };
  }
}

interface MediaSpec {
  method: string;
  /** The InputFile field, which is also the file's kind. */
  field: 'photo' | 'document' | 'video' | 'audio' | 'animation' | 'voice' | 'sticker';
  captioned: boolean;
}

export const MEDIA_SENDS: MediaSpec[] = [
  { method: 'sendPhoto', field: 'photo', captioned: true },
  { method: 'sendDocument', field: 'document', captioned: true },
  { method: 'sendVideo', field: 'video', captioned: true },
  { method: 'sendAudio', field: 'audio', captioned: true },
  { method: 'sendAnimation', field: 'animation', captioned: true },
  { method: 'sendVoice', field: 'voice', captioned: true },
  { method: 'sendSticker', field: 'sticker', captioned: false },
];

/** One media send: validations in the Bot API server's order (file, caption, chat, reply, flood). */
export function sendMedia(
  spec: MediaSpec,
  bot: BotState,
  params: Params,
  env: MessagingEnv,
  scope: RequestScope,
): TgMessage {
  const source = inputFileSource(bot, params[spec.field], scope.files, { field: spec.field });
  const caption = spec.captioned ? captionOf(params) : {};
  const target = sendTarget(bot, params, env);
  const pre = preflight(bot, target, params, env);
  const file = materialize(bot, spec.field, source);
  const content = fileContent(bot, spec.field, file, params);
  if (caption.caption !== undefined) content.caption = caption.caption;
  return postMessage(bot, env, target, params, pre, content, {
    method: spec.method,
    text: mediaLabel(spec.field, caption.caption),
    media: spec.field,
    caption: caption.caption,
    file_id: file.file_id,
    parse_mode: caption.parseMode,
  });
}

const ALBUM_TYPES = new Set(['photo', 'video', 'document', 'audio']);

/** One InputMedia item (sendMediaGroup, editMessageMedia), checked: its kind, file source and caption. */
export interface InputMediaItem {
  kind: string;
  source: FileSource;
  caption: Caption;
  item: Params;
}

/** Validate one InputMedia object; its file is checked, not registered. */
export function checkInputMedia(
  bot: BotState,
  raw: unknown,
  files: RequestScope['files'],
  types: ReadonlySet<string>,
): InputMediaItem {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new BotApiError(400, TG_DESCRIPTIONS.badInputMedia('expected an Object'));
  }
  const item = raw as Params;
  if (typeof item.type !== 'string' || item.type === '') {
    throw new BotApiError(400, TG_DESCRIPTIONS.badInputMedia('field "type" must be of type String'));
  }
  if (!types.has(item.type)) {
    throw new BotApiError(400, TG_DESCRIPTIONS.badInputMedia(`type "${item.type}" can't be used here`));
  }
  const source = inputFileSource(bot, item.media === undefined ? 'attach://' : item.media, files, 'input_media');
  return { kind: item.type, item, source, caption: captionOf(item) };
}

/** The `media` parameter as a value: absent, not JSON, not an array: the Bot API server's 400s. */
export function mediaParam(params: Params, expect: 'array' | 'object'): unknown {
  const media = params.media;
  if (media === undefined || media === null || media === '') {
    throw new BotApiError(400, TG_DESCRIPTIONS.parameterRequired('media'));
  }
  if (typeof media === 'string') {
    throw new BotApiError(
      400,
      expect === 'array' ? TG_DESCRIPTIONS.badMediaJson : "Bad Request: can't parse input media JSON object",
    );
  }
  if (expect === 'array' && !Array.isArray(media)) throw new BotApiError(400, TG_DESCRIPTIONS.expectedInputMediaArray);
  if (expect === 'object' && (typeof media !== 'object' || Array.isArray(media))) {
    throw new BotApiError(400, TG_DESCRIPTIONS.badInputMedia('expected an Object'));
  }
  return media;
}

export function sendMediaGroup(bot: BotState, params: Params, env: MessagingEnv, scope: RequestScope): TgMessage[] {
  const media = mediaParam(params, 'array') as unknown[];
  if (media.length < ALBUM_MIN || media.length > ALBUM_MAX) throw new BotApiError(400, TG_DESCRIPTIONS.mediaGroupSize);
  const items = media.map((r) => checkInputMedia(bot, r, scope.files, ALBUM_TYPES));
  const target = sendTarget(bot, params, env);
  // an album has no reply markup (the Bot API server ignores it); every item replies to the same message
  const pre = preflight(bot, target, { ...params, reply_markup: undefined }, env);
  const groupId = `${bot.id}${String(bot.lastMessageIdOf(target.chat.id) + 1).padStart(6, '0')}`;
  return items.map((it) => {
    const file = materialize(bot, it.kind, it.source);
    const content = fileContent(bot, it.kind, file, it.item);
    content.media_group_id = groupId;
    if (it.caption.caption !== undefined) content.caption = it.caption.caption;
    return postMessage(bot, env, target, params, pre, content, {
      method: 'sendMediaGroup',
      text: mediaLabel(it.kind, it.caption.caption),
      media: it.kind,
      caption: it.caption.caption,
      file_id: file.file_id,
      parse_mode: it.caption.parseMode,
    });
  });
}

function floatParam(value: unknown): number | undefined {
  const n = typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : NaN;
  return Number.isFinite(n) ? n : undefined;
}

/** A message of one non-file kind (location, contact, poll, dice): checks, then the content, then posted. */
function postKind(
  bot: BotState,
  params: Params,
  env: MessagingEnv,
  sent: { method: string; kind: string; label?: string },
  content: () => Params,
): TgMessage {
  const target = sendTarget(bot, params, env);
  const pre = preflight(bot, target, params, env);
  return postMessage(bot, env, target, params, pre, content(), {
    method: sent.method,
    text: mediaLabel(sent.kind, sent.label),
    media: sent.kind,
  });
}

export function sendLocation(bot: BotState, params: Params, env: MessagingEnv): TgMessage {
  const latitude = floatParam(params.latitude);
  if (latitude === undefined) throw new BotApiError(400, TG_DESCRIPTIONS.latitudeEmpty);
  const longitude = floatParam(params.longitude);
  if (longitude === undefined) throw new BotApiError(400, TG_DESCRIPTIONS.longitudeEmpty);
  return postKind(bot, params, env, { method: 'sendLocation', kind: 'location' }, () => ({
    location: { latitude, longitude },
  }));
}

function requiredString(params: Params, name: string): string {
  const v = params[name];
  if (v === undefined || v === null || v === '') throw new BotApiError(400, TG_DESCRIPTIONS.parameterRequired(name));
  return textParam(v);
}

export function sendContact(bot: BotState, params: Params, env: MessagingEnv): TgMessage {
  const contact: Params = {
    phone_number: requiredString(params, 'phone_number'),
    first_name: requiredString(params, 'first_name'),
  };
  if (typeof params.last_name === 'string' && params.last_name) contact.last_name = params.last_name;
  return postKind(bot, params, env, { method: 'sendContact', kind: 'contact' }, () => ({ contact }));
}

function pollOptions(raw: unknown): string[] {
  if (raw === undefined || typeof raw === 'string')
    throw new BotApiError(400, "Bad Request: can't parse options JSON object");
  if (!Array.isArray(raw)) throw new BotApiError(400, 'Bad Request: expected an Array of String as options');
  const options = raw.map((o: unknown) => {
    if (typeof o === 'string') return o;
    if (o && typeof o === 'object' && typeof (o as Params).text === 'string') return (o as Params).text as string;
    throw new BotApiError(400, 'Bad Request: expected an option to be of type String');
  });
  if (options.length < 2) throw new BotApiError(400, 'Bad Request: poll must have at least 2 option');
  if (options.length > 12) throw new BotApiError(400, "Bad Request: poll can't have more than 12 options");
  return options;
}

export function sendPoll(bot: BotState, params: Params, env: MessagingEnv): TgMessage {
  const question = typeof params.question === 'string' ? params.question : '';
  if (question.trim() === '') throw new BotApiError(400, 'Bad Request: poll question must be non-empty');
  const options = pollOptions(params.options);
  return postKind(bot, params, env, { method: 'sendPoll', kind: 'poll', label: question }, () => ({
    poll: {
      id: `${bot.id}${String(bot.sent.length + 1).padStart(8, '0')}`,
      question,
      options: options.map((text) => ({ text, voter_count: 0 })),
      total_voter_count: 0,
      is_closed: false,
      is_anonymous:
        params.is_anonymous === undefined ? true : params.is_anonymous === true || params.is_anonymous === 'true',
      type: params.type === 'quiz' ? 'quiz' : 'regular',
      allows_multiple_answers: params.allows_multiple_answers === true || params.allows_multiple_answers === 'true',
    },
  }));
}

/** The dice Telegram offers and the highest value of each. */
const DICE_MAX: Record<string, number> = { '🎲': 6, '🎯': 6, '🎳': 6, '🏀': 5, '⚽': 5, '🎰': 64 };

export function sendDice(bot: BotState, params: Params, env: MessagingEnv): TgMessage {
  const emoji = typeof params.emoji === 'string' && params.emoji !== '' ? params.emoji : '🎲';
  const max = DICE_MAX[emoji];
  if (max === undefined) throw new BotApiError(400, 'Bad Request: emoji is not supported');
  return postKind(bot, params, env, { method: 'sendDice', kind: 'dice', label: emoji }, () => ({
    dice: { emoji, value: 1 + Math.floor(Math.random() * max) },
  }));
}
