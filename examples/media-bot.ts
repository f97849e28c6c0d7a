/**
 * Media example: photos from a Buffer and from a URL, a document from a local path, an album and an
 * edit of a photo's caption. `BOT_HANDLERS=examples/media-bot.ts npm start`, then in the sandbox chat:
 *
 * - `/photo`: a photo uploaded from a Buffer (multipart/form-data);
 * - `/url`: a photo by URL (Telegram downloads it; nothing is uploaded);
 * - `/document`: this very file, uploaded from its local path;
 * - `/album`: three photos as one media group;
 * - `/caption`: a photo, then an edit of its caption (the bot may edit only its own messages).
 */
import { Input } from 'telegraf';
import { defineBot } from 'tg-relay';

/** A 1×1 PNG: small enough to live in the source, real enough for Telegram to take as a photo. */
export const PIXEL_PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);

export const PHOTO_URL = 'https://telegram.org/img/t_logo.png';

/** Album items: distinct bytes per photo (Telegram would dedupe identical uploads by content). */
export function albumPhotos(): Buffer[] {
  return [1, 2, 3].map((i) => Buffer.concat([PIXEL_PNG, Buffer.from([i])]));
}

export default defineBot((bot) => {
  bot.command('photo', (ctx) =>
    ctx.replyWithPhoto(Input.fromBuffer(PIXEL_PNG, 'pixel.png'), { caption: 'From a Buffer' }),
  );

  // a URL is passed to Telegram as is: its servers download the file (Input.fromURL returns the string)
  bot.command('url', (ctx) => ctx.replyWithPhoto(Input.fromURL(PHOTO_URL), { caption: 'From a URL' }));

  // __filename: the one local file sure to exist beside the module, from the sources and from dist/
  bot.command('document', (ctx) => ctx.replyWithDocument(Input.fromLocalFile(__filename), { caption: 'My source' }));

  bot.command('album', (ctx) =>
    ctx.replyWithMediaGroup(
      albumPhotos().map((bytes, i) => ({
        type: 'photo' as const,
        media: Input.fromBuffer(bytes, `photo-${i + 1}.png`),
        caption: i === 0 ? 'An album of three' : undefined,
      })),
    ),
  );

  bot.command('caption', async (ctx) => {
    const sent = await ctx.replyWithPhoto(Input.fromBuffer(PIXEL_PNG, 'pixel.png'), { caption: 'Before' });
    // with REPLY_MODE=outbound the id is a placeholder the relay resolves to the real message's id
    await ctx.telegram.editMessageCaption(ctx.chat.id, sent.message_id, undefined, 'After: caption edited');
  });
});
