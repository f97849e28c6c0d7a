/** examples/media-bot.ts on plain telegraf against the sandbox: what it uploads, byte for byte. */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import mediaBot, { albumPhotos, PHOTO_URL, PIXEL_PNG } from '../../../examples/media-bot';
import { startExample, TOKEN, type ExampleHarness } from './harness';

const CHAT = 6001;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

let h: ExampleHarness;
beforeEach(async () => {
  h = await startExample(mediaBot);
});
afterEach(() => h.stop());

describe('media bot', () => {
  it('/photo uploads the Buffer as a multipart part named photo', async () => {
    await h.say(CHAT, '/photo');
    const [call] = h.calls();
    expect(call).toMatchObject({
      method: 'sendPhoto',
      status: 200,
      params: { chat_id: String(CHAT), caption: 'From a Buffer' },
    });
    expect(call.files).toEqual([
      expect.objectContaining({ part: 'photo', filename: 'pixel.png', size: PIXEL_PNG.length, sha256: sha(PIXEL_PNG) }),
    ]);
    expect(Buffer.from(call.files![0].data_base64!, 'base64').equals(PIXEL_PNG)).toBe(true);
  });

  it('/url passes the URL to Telegram without uploading anything', async () => {
    await h.say(CHAT, '/url');
    const [call] = h.calls();
    expect(call).toMatchObject({
      method: 'sendPhoto',
      status: 200,
      params: { photo: PHOTO_URL, caption: 'From a URL' },
    });
    expect(call.files).toBeUndefined();
  });

  it('/document uploads its own source file from the local path', async () => {
    await h.say(CHAT, '/document');
    const [call] = h.calls();
    const source = path.resolve(__dirname, '../../../examples/media-bot.ts');
    expect(call).toMatchObject({ method: 'sendDocument', status: 200 });
    expect(call.files![0]).toMatchObject({
      part: 'document',
      filename: 'media-bot.ts',
      sha256: sha(readFileSync(source)),
    });
  });

  it('/album sends three photos as one media group, each an attach:// part', async () => {
    await h.say(CHAT, '/album');
    const [call] = h.calls();
    expect(call).toMatchObject({ method: 'sendMediaGroup', status: 200 });
    const media = call.params.media as Array<{ type: string; media: string; caption?: string }>;
    expect(media.map((m) => m.type)).toEqual(['photo', 'photo', 'photo']);
    expect(media[0].caption).toBe('An album of three');
    const parts = media.map((m) => m.media.replace(/^attach:\/\//, ''));
    expect(call.files!.map((f) => f.part).sort()).toEqual([...parts].sort());
    const byPart = new Map(call.files!.map((f) => [f.part, f.sha256]));
    expect(parts.map((p) => byPart.get(p))).toEqual(albumPhotos().map(sha));
    expect(h.sandbox.sent(TOKEN).map((s) => s.text)).toEqual(['[photo] An album of three', '[photo]', '[photo]']);
  });

  it('/caption edits the caption of the photo it just sent', async () => {
    await h.say(CHAT, '/caption');
    const [send, edit] = h.calls();
    expect(send).toMatchObject({ method: 'sendPhoto', status: 200 });
    const sent = h.sandbox.sent(TOKEN)[0];
    expect(edit).toMatchObject({
      method: 'editMessageCaption',
      status: 200,
      params: { chat_id: CHAT, message_id: sent.message_id, caption: 'After: caption edited' },
    });
    expect(h.sandbox.sent(TOKEN).map((s) => [s.method, s.text])).toEqual([
      ['sendPhoto', '[photo] Before'],
      ['editMessageCaption', '[photo] After: caption edited'],
    ]);
  });
});
