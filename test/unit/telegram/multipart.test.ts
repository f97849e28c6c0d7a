/**
 * The Bot API client's multipart/form-data, read back by the sandbox's parser (the fake Bot API the
 * tests send to): every field as the Bot API expects it (strings as they are, others JSON) and
 * every file's exact bytes, whatever they contain.
 */
import fc from 'fast-check';
import { multipartBoundary, parseMultipart } from '../../../libs/sandbox/multipart';
import { multipartBody } from '../../../libs/telegram/post';

it('round-trips fields and arbitrary file bytes', () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 2000 }), fc.string(), fc.integer(), (bytes, caption, n) => {
      const { body, contentType } = multipartBody(
        { chat_id: n, caption, reply_markup: { inline_keyboard: [] }, photo: 'attach://p', skipped: undefined },
        [{ part: 'p', filename: 'a "b".jpg', bytes: Buffer.from(bytes) }],
      );
      const parsed = parseMultipart(body, multipartBoundary(contentType) ?? '');
      expect(Object.fromEntries(parsed.fields)).toEqual({
        chat_id: String(n),
        caption,
        reply_markup: JSON.stringify({ inline_keyboard: [] }),
        photo: 'attach://p',
      });
      expect([...parsed.files.values()].map((f) => [f.name, f.filename, f.data])).toEqual([
        ['p', 'a _b_.jpg', Buffer.from(bytes)],
      ]);
    }),
  );
});
