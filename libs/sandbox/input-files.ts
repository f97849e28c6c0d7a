/**
 * InputFile resolution as the Bot API server does it (telegram-bot-api Client::get_input_file): a
 * file part named like the field, `attach://<part>` naming another part, a file_id the bot was given,
 * or an HTTP URL Telegram would download. Each file gets a file_id (kept per bot, so a later send
 * may name it) and a file_unique_id derived from the content (the same bytes: the same unique id).
 */
import { createHash } from 'node:crypto';
import type { BotState, StoredFile } from './bot-state';
import { TG_DESCRIPTIONS } from './constants';
import { BotApiError } from './http-io';
import type { UploadedPart } from './multipart';

const ATTACH = 'attach://';

/** Where a missing file is reported: a top-level field ("there is no photo…") or an InputMedia item. */
export type MissingFile = { field: string } | 'input_media';

function missing(where: MissingFile): BotApiError {
  return where === 'input_media'
    ? new BotApiError(400, TG_DESCRIPTIONS.inputMediaNotFound)
    : new BotApiError(400, TG_DESCRIPTIONS.noFileInRequest(where.field));
}

function uniqueId(seed: string | Buffer): string {
  return createHash('sha256').update(seed).digest('base64url').slice(0, 16);
}

function register(bot: BotState, kind: string, unique: string, extra: Partial<StoredFile>): StoredFile {
  const file: StoredFile = {
    file_id: `SBX${kind.toUpperCase()}_${bot.files.size + 1}_${unique}`,
    file_unique_id: unique,
    kind,
    ...extra,
  };
  bot.files.set(file.file_id, file);
  return file;
}

function fromUpload(bot: BotState, kind: string, part: UploadedPart): StoredFile {
  const extra: Partial<StoredFile> = { file_size: part.data.length, file_name: part.filename };
  if (part.contentType) extra.mime_type = part.contentType;
  return register(bot, kind, uniqueId(part.data), extra);
}

/** Where a file comes from, checked but not yet given a file_id. */
export type FileSource =
  { type: 'upload'; part: UploadedPart } | { type: 'known'; file: StoredFile } | { type: 'url'; url: string };

/**
 * The file a field names, checked: `value` is the field's text (undefined when absent: the part of
 * the same name is the upload); `files` are the request's file parts. Nothing is registered yet, so
 * a send refused later (flood control) leaves no file_id behind.
 */
export function inputFileSource(
  bot: BotState,
  value: unknown,
  files: ReadonlyMap<string, UploadedPart>,
  where: MissingFile,
): FileSource {
  if (value === undefined || value === null || value === '') {
    const part = typeof where === 'object' ? files.get(where.field) : undefined;
    if (!part) throw missing(where);
    return { type: 'upload', part };
  }
  if (typeof value !== 'string') throw new BotApiError(400, TG_DESCRIPTIONS.wrongFileId);
  if (value.startsWith(ATTACH)) {
    const part = files.get(value.slice(ATTACH.length));
    if (!part) throw missing(where);
    return { type: 'upload', part };
  }
  const known = bot.files.get(value);
  if (known) return { type: 'known', file: known };
  if (/^https?:\/\/[^\s/]+/i.test(value)) return { type: 'url', url: value };
  throw new BotApiError(400, TG_DESCRIPTIONS.wrongFileId);
}

/** The file of a checked source, with its file_id (a new one for an upload or a URL). */
export function materialize(bot: BotState, kind: string, source: FileSource): StoredFile {
  if (source.type === 'known') return source.file;
  if (source.type === 'url') return register(bot, kind, uniqueId(source.url), {});
  return fromUpload(bot, kind, source.part);
}

const PHOTO_SIZES = [90, 320, 800] as const;

/** A photo as Telegram answers it: sizes smallest first, the largest being the stored file. */
export function photoSizes(bot: BotState, file: StoredFile): Array<Record<string, unknown>> {
  return PHOTO_SIZES.map((side, i) => {
    const last = i === PHOTO_SIZES.length - 1;
    let id = file.file_id;
    if (!last) {
      id = `${file.file_id}_s${side}`;
      if (!bot.files.has(id)) bot.files.set(id, { ...file, file_id: id, file_unique_id: `${file.file_unique_id}${i}` });
    }
    const size: Record<string, unknown> = {
      file_id: id,
      file_unique_id: last ? file.file_unique_id : `${file.file_unique_id}${i}`,
      width: side,
      height: side,
    };
    if (file.file_size !== undefined) size.file_size = last ? file.file_size : Math.ceil(file.file_size / (4 - i));
    return size;
  });
}

/** The Telegram object of a non-photo file (`document`, `video`, …). */
export function fileObject(file: StoredFile, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const o: Record<string, unknown> = { file_id: file.file_id, file_unique_id: file.file_unique_id, ...extra };
  if (file.file_name !== undefined) o.file_name = file.file_name;
  if (file.mime_type !== undefined) o.mime_type = file.mime_type;
  if (file.file_size !== undefined) o.file_size = file.file_size;
  return o;
}
