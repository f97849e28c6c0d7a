/**
 * Validation of relayed calls other than sendMessage: any input gets problems, never another
 * exception; the per-method table and the text and caption bounds decide.
 */
import fc from 'fast-check';
import { OutboundValidationError } from '../../../libs/outbound/errors';
import { validateOutboundMessage } from '../../../libs/outbound/message';
import { OUTBOUND_PARAMS_MAX_BYTES, TELEGRAM_CAPTION_MAX } from '../../../libs/outbound/method-params';
import { RELAYED_METHODS } from '../../../libs/telegram/methods';
import { newPlaceholder } from '../../../libs/telegram/placeholders';

function problems(input: unknown): Record<string, string> {
  try {
    validateOutboundMessage(input);
  } catch (err) {
    expect(err).toBeInstanceOf(OutboundValidationError);
    return Object.fromEntries((err as OutboundValidationError).problems.map((p) => [p.field, p.problem]));
  }
  return {};
}

it('arbitrary params, methods, uploads and placeholders never throw anything but OutboundValidationError', () => {
  fc.assert(
    fc.property(
      fc.oneof(fc.constantFrom(...RELAYED_METHODS, 'getMe', 'sendChatAction', ''), fc.anything()),
      fc.oneof(fc.anything(), fc.dictionary(fc.string(), fc.anything()), fc.object()),
      fc.oneof(
        fc.constant(undefined),
        fc.anything(),
        fc.array(fc.record({ part: fc.string(), filename: fc.string(), bytes: fc.uint8Array() })),
      ),
      fc.oneof(fc.constant(undefined), fc.anything(), fc.array(fc.integer())),
      (method, params, uploads, placeholders) => {
        try {
          const m = validateOutboundMessage({ msg_id: 'p-1', chat_id: 1, method, params, uploads, placeholders });
          // accepted: a relayed method with an object of params (or a sendMessage without any)
          expect(RELAYED_METHODS).toContain(m.method);
        } catch (err) {
          if (!(err instanceof OutboundValidationError)) throw err;
          expect(err.problems.length).toBeGreaterThan(0);
        }
      },
    ),
    { numRuns: 500 },
  );
});

it('a caption is bounded at 1024 characters without parse_mode only', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 2000 }), fc.boolean(), (n, html) => {
      const p = problems({
        msg_id: 'c-1',
        chat_id: 1,
        method: 'sendPhoto',
        params: { photo: 'https://x/y.jpg', caption: 'x'.repeat(n), ...(html ? { parse_mode: 'HTML' } : {}) },
      });
      expect('params.caption' in p).toBe(!html && n > TELEGRAM_CAPTION_MAX);
    }),
  );
});

it('editMessageText text follows the message text rules without parse_mode', () => {
  const edit = (text: unknown, extra: Record<string, unknown> = {}) =>
    problems({ msg_id: 'e', chat_id: 1, method: 'editMessageText', params: { message_id: 3, text, ...extra } });
  expect(edit('x'.repeat(4096))).toEqual({});
  expect(edit('x'.repeat(4097))).toHaveProperty(['params.text']);
  expect(edit('   ')).toHaveProperty(['params.text']);
  expect(edit('<b>' + 'x'.repeat(4096) + '</b>', { parse_mode: 'HTML' })).toEqual({});
  expect(edit('\u0000')).toHaveProperty('params'); // what jsonb cannot hold, anywhere in params
});

it('params are bounded in size, uploads must be named by the params, placeholders must be placeholders', () => {
  expect(
    problems({
      msg_id: 's',
      chat_id: 1,
      method: 'sendPhoto',
      params: { photo: 'x'.repeat(OUTBOUND_PARAMS_MAX_BYTES) },
    }),
  ).toHaveProperty('params');
  expect(
    problems({
      msg_id: 'u',
      chat_id: 1,
      method: 'sendMediaGroup',
      params: {
        media: [
          { type: 'photo', media: 'attach://a' },
          { type: 'photo', media: 'attach://b' },
        ],
      },
      uploads: [{ part: 'a', filename: 'a.jpg', bytes: Buffer.from('a') }],
    }),
  ).toEqual({ params: 'names "attach://b" but no upload has that part' });
  expect(
    problems({ msg_id: 'p', chat_id: 1, method: 'deleteMessage', params: { message_id: 1 }, placeholders: [5] }),
  ).toHaveProperty('placeholders');
  expect(
    problems({
      msg_id: 'p',
      chat_id: 1,
      method: 'deleteMessage',
      params: { message_id: newPlaceholder() },
      placeholders: [newPlaceholder()],
    }),
  ).toEqual({});
});

it('an answer ignores the chat it was given; sendMessage rows are as before', () => {
  expect(
    validateOutboundMessage({
      msg_id: 'a',
      chat_id: 'not a chat',
      method: 'answerCallbackQuery',
      params: { callback_query_id: '1' },
    }).chatId,
  ).toBeNull();
  expect(validateOutboundMessage({ msg_id: 'm', chat_id: 5, text: 'hi' })).toMatchObject({
    method: 'sendMessage',
    params: null,
    text: 'hi',
  });
});
