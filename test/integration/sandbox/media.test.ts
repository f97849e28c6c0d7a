/**
 * Media sends over multipart/form-data: uploads (top-level InputFile fields and `attach://` parts
 * inside `media[]`), their record in the call log (byte for byte), file_ids, albums, and the Bot API
 * server's 400s (telegram-bot-api Client.cpp) for missing files and malformed bodies.
 */
import { createHash } from 'node:crypto';
import { Telegram } from 'telegraf';
import { createBotApiSandbox, TG_DESCRIPTIONS, type BotApiSandbox } from '../../../libs/sandbox';
import { tg, type TgResponse } from '../../support/sandbox-helpers';

const TOKEN = '3232:media-secret';
const CHAT = 77;

let sb: BotApiSandbox;
let api: string;

beforeEach(async () => {
  sb = createBotApiSandbox({ limits: { enabled: false } });
  api = await sb.start();
});
afterEach(async () => {
  await sb.stop();
});

type Answer = Pick<TgResponse, 'status' | 'body'>;

async function form(
  method: string,
  fields: Record<string, string>,
  files: Record<string, [string, Buffer]> = {},
): Promise<Answer> {
  const body = new FormData();
  for (const [k, v] of Object.entries(fields)) body.append(k, v);
  for (const [k, [name, data]] of Object.entries(files)) body.append(k, new Blob([data], { type: 'image/jpeg' }), name);
  const res = await fetch(`${api}/bot${TOKEN}/${method}`, { method: 'POST', body });
  return { status: res.status, body: await res.json() };
}

async function raw(method: string, contentType: string, body: Buffer | string): Promise<Answer> {
  const res = await fetch(`${api}/bot${TOKEN}/${method}`, {
    method: 'POST',
    headers: { 'Content-Type': contentType },
    body,
  });
  return { status: res.status, body: await res.json() };
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('multipart uploads', () => {
  it('sendPhoto with a file part answers a photo message and records the upload byte for byte', async () => {
    const bytes = Buffer.from([0xff, 0xd8, 0xff, 0x00, 0x0d, 0x0a, 0x2d, 0x2d, 1, 2, 3]); // CRLF and "--" inside
    const r = await form('sendPhoto', { chat_id: String(CHAT), caption: 'a cat' }, { photo: ['cat.jpg', bytes] });
    expect(r.status).toBe(200);
    const m = r.body.result;
    expect(m).toMatchObject({ message_id: 1, chat: { id: CHAT }, caption: 'a cat', from: { is_bot: true } });
    expect(m.photo).toHaveLength(3);
    const largest = m.photo[2];
    expect(largest).toMatchObject({ file_size: bytes.length });
    expect(typeof largest.file_id).toBe('string');
    expect(m.photo.map((p: { width: number }) => p.width)).toEqual([90, 320, 800]);

    const [call] = sb.calls(TOKEN, { method: 'sendPhoto' });
    expect(call.params).toEqual({ chat_id: String(CHAT), caption: 'a cat' });
    expect(call.files).toEqual([
      {
        part: 'photo',
        filename: 'cat.jpg',
        content_type: 'image/jpeg',
        size: bytes.length,
        sha256: sha(bytes),
        data_base64: bytes.toString('base64'),
      },
    ]);
    expect(sb.sent(TOKEN)).toEqual([
      expect.objectContaining({ method: 'sendPhoto', text: '[photo] a cat', media: 'photo', caption: 'a cat' }),
    ]);

    // the file_id names the same file in a later send, without an upload
    const again = await tg(api, TOKEN, 'sendPhoto', { chat_id: CHAT, photo: largest.file_id });
    expect(again.body.result.photo[2].file_unique_id).toBe(largest.file_unique_id);
    expect(sb.calls(TOKEN, { method: 'sendPhoto' })[1].files).toBeUndefined();
  });

  it('keeps sha256 and size but not the bytes of an upload above maxRecordedFileBytes', async () => {
    await sb.stop();
    sb = createBotApiSandbox({ limits: { enabled: false }, maxRecordedFileBytes: 4 });
    api = await sb.start();
    const bytes = Buffer.from('0123456789');
    await form('sendDocument', { chat_id: String(CHAT) }, { document: ['a.bin', bytes] });
    const [call] = sb.calls(TOKEN, { method: 'sendDocument' });
    expect(call.files![0]).toMatchObject({ size: 10, sha256: sha(bytes), truncated: true });
    expect(call.files![0].data_base64).toBeUndefined();
  });

  it('resolves attach://<part> for a top-level field and reports a missing part as Telegram does', async () => {
    const ok = await form(
      'sendDocument',
      { chat_id: String(CHAT), document: 'attach://doc1' },
      { doc1: ['r.pdf', Buffer.from('%PDF')] },
    );
    expect(ok.body.result.document).toMatchObject({ file_name: 'r.pdf', file_size: 4 });
    const missing = await form('sendDocument', { chat_id: String(CHAT), document: 'attach://nope' });
    expect([missing.status, missing.body.description]).toEqual([400, TG_DESCRIPTIONS.noFileInRequest('document')]);
    expect(missing.body.description).toBe('Bad Request: there is no document in the request');
    const none = await tg(api, TOKEN, 'sendPhoto', { chat_id: CHAT });
    expect(none.body.description).toBe('Bad Request: there is no photo in the request');
    const junk = await tg(api, TOKEN, 'sendPhoto', { chat_id: CHAT, photo: 'not-a-file-id' });
    expect(junk.body.description).toBe(TG_DESCRIPTIONS.wrongFileId);
    const url = await tg(api, TOKEN, 'sendPhoto', { chat_id: CHAT, photo: 'https://example.com/cat.jpg' });
    expect(url.body.result.photo).toHaveLength(3);
  });

  it('sendMediaGroup uploads parts named by attach:// and answers Message[] sharing a media_group_id', async () => {
    const parts = [Buffer.from('one'), Buffer.from('two'), Buffer.from('three')];
    const media = parts.map((_, i) => ({
      type: 'photo',
      media: `attach://p${i}`,
      caption: i === 0 ? 'album' : undefined,
    }));
    const r = await form(
      'sendMediaGroup',
      { chat_id: String(CHAT), media: JSON.stringify(media) },
      Object.fromEntries(parts.map((b, i) => [`p${i}`, [`p${i}.jpg`, b] as [string, Buffer]])),
    );
    expect(r.status).toBe(200);
    const msgs = r.body.result as Array<{ message_id: number; media_group_id: string; caption?: string }>;
    expect(msgs.map((m) => m.message_id)).toEqual([1, 2, 3]);
    expect(new Set(msgs.map((m) => m.media_group_id)).size).toBe(1);
    expect(msgs[0].caption).toBe('album');
    const [call] = sb.calls(TOKEN, { method: 'sendMediaGroup' });
    expect(call.params.media).toEqual(JSON.parse(JSON.stringify(media)));
    expect(call.files!.map((f) => [f.part, f.sha256])).toEqual(parts.map((b, i) => [`p${i}`, sha(b)]));
    expect(sb.sent(TOKEN).map((s) => s.text)).toEqual(['[photo] album', '[photo]', '[photo]']);
  });

  it('sendMediaGroup refuses 1 or 11 items, a missing attach part and non-JSON media', async () => {
    const item = { type: 'photo', media: 'https://example.com/x.jpg' };
    const one = await tg(api, TOKEN, 'sendMediaGroup', { chat_id: CHAT, media: [item] });
    expect(one.body.description).toBe(TG_DESCRIPTIONS.mediaGroupSize);
    const eleven = await tg(api, TOKEN, 'sendMediaGroup', { chat_id: CHAT, media: Array(11).fill(item) });
    expect(eleven.body.description).toBe(TG_DESCRIPTIONS.mediaGroupSize);
    const missing = await form('sendMediaGroup', {
      chat_id: String(CHAT),
      media: JSON.stringify([item, { type: 'photo', media: 'attach://gone' }]),
    });
    expect([missing.status, missing.body.description]).toEqual([
      400,
      "Bad Request: can't parse InputMedia: media not found",
    ]);
    const notJson = await form('sendMediaGroup', { chat_id: String(CHAT), media: 'not json' });
    expect(notJson.body.description).toBe("Bad Request: can't parse media JSON object");
    const absent = await tg(api, TOKEN, 'sendMediaGroup', { chat_id: CHAT });
    expect(absent.body.description).toBe('Bad Request: parameter "media" is required');
    // nothing was sent and no message id was used by a refused album
    expect(sb.sent(TOKEN)).toEqual([]);
    expect((await tg(api, TOKEN, 'sendMessage', { chat_id: CHAT, text: 'x' })).body.result.message_id).toBe(1);
  });

  it('decodes JSON fields of multipart text parts (reply_markup) and keeps other fields as text', async () => {
    const markup = { inline_keyboard: [[{ text: 'ok', callback_data: 'ok' }]] };
    const r = await form(
      'sendPhoto',
      { chat_id: String(CHAT), reply_markup: JSON.stringify(markup), caption: '{"not":"json field"}' },
      { photo: ['x.jpg', Buffer.from('x')] },
    );
    expect(r.body.result.reply_markup).toEqual(markup);
    expect(r.body.result.caption).toBe('{"not":"json field"}');
  });

  it('answers a malformed multipart body 400 "Bad Request: …" and an oversized one 413', async () => {
    const noClose = await raw(
      'sendPhoto',
      'multipart/form-data; boundary=XX',
      '--XX\r\nContent-Disposition: form-data; name="chat_id"\r\n\r\n1\r\n',
    );
    expect(noClose.status).toBe(400);
    expect(noClose.body.description).toMatch(/^Bad Request: can't parse multipart\/form-data request: /);
    const noBoundary = await raw('sendPhoto', 'multipart/form-data', '--XX--');
    expect(noBoundary.body.description).toMatch(/^Bad Request: .*boundary/);
    const noName = await raw(
      'sendPhoto',
      'multipart/form-data; boundary=XX',
      '--XX\r\nContent-Disposition: form-data\r\n\r\n1\r\n--XX--',
    );
    expect(noName.body.description).toMatch(/a part has no name/);
    expect(sb.calls(TOKEN, { method: 'sendPhoto' }).every((c) => c.status === 400)).toBe(true);

    const big = Buffer.alloc(61 * 1024 * 1024, 0x61);
    const tooLarge = await raw('sendDocument', 'multipart/form-data; boundary=XX', big);
    expect([tooLarge.status, tooLarge.body.description]).toEqual([413, 'Request Entity Too Large']);
  });

  it("telegraf's own multipart client: a Buffer, a local path and an album upload and read back", async () => {
    const telegram = new Telegram(TOKEN, { apiRoot: api });
    const buf = Buffer.from('png bytes');
    const photo = await telegram.sendPhoto(CHAT, { source: buf, filename: 'b.png' }, { caption: 'buf' });
    expect(photo.caption).toBe('buf');
    const doc = await telegram.sendDocument(CHAT, { source: __filename });
    expect(doc.document.file_name).toBe('media.test.ts');
    const album = await telegram.sendMediaGroup(CHAT, [
      { type: 'photo', media: { source: Buffer.from('a') } },
      { type: 'photo', media: { source: Buffer.from('b') } },
    ]);
    expect(album).toHaveLength(2);
    const calls = sb.calls(TOKEN);
    expect(calls.map((c) => c.method)).toEqual(['sendPhoto', 'sendDocument', 'sendMediaGroup']);
    expect(calls[0].files![0]).toMatchObject({ part: 'photo', filename: 'b.png', sha256: sha(buf) });
    expect(calls[2].files!.map((f) => Buffer.from(f.data_base64!, 'base64').toString())).toEqual(['a', 'b']);
  });
});

describe('other content sends', () => {
  it('sendLocation, sendContact, sendPoll, sendDice answer their objects; required fields are 400s', async () => {
    const loc = await tg(api, TOKEN, 'sendLocation', { chat_id: CHAT, latitude: 52.5, longitude: '13.4' });
    expect(loc.body.result.location).toEqual({ latitude: 52.5, longitude: 13.4 });
    expect((await tg(api, TOKEN, 'sendLocation', { chat_id: CHAT, longitude: 1 })).body.description).toBe(
      'Bad Request: latitude is empty',
    );
    const contact = await tg(api, TOKEN, 'sendContact', { chat_id: CHAT, phone_number: '+1', first_name: 'Ann' });
    expect(contact.body.result.contact).toEqual({ phone_number: '+1', first_name: 'Ann' });
    expect((await tg(api, TOKEN, 'sendContact', { chat_id: CHAT, phone_number: '+1' })).body.description).toBe(
      'Bad Request: parameter "first_name" is required',
    );
    const poll = await tg(api, TOKEN, 'sendPoll', { chat_id: CHAT, question: 'Q?', options: ['a', { text: 'b' }] });
    expect(poll.body.result.poll).toMatchObject({ question: 'Q?', options: [{ text: 'a' }, { text: 'b' }] });
    expect((await tg(api, TOKEN, 'sendPoll', { chat_id: CHAT, question: 'Q?', options: ['a'] })).status).toBe(400);
    const dice = await tg(api, TOKEN, 'sendDice', { chat_id: CHAT, emoji: '🏀' });
    expect(dice.body.result.dice.emoji).toBe('🏀');
    expect(dice.body.result.dice.value).toBeGreaterThanOrEqual(1);
    expect(dice.body.result.dice.value).toBeLessThanOrEqual(5);
    expect(sb.sent(TOKEN).map((s) => s.message_id)).toEqual([1, 2, 3, 4]);
  });
});
