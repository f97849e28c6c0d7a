/**
 * The differential test's comparison (test/integration/dispatch/differential-helpers.ts): JSON and
 * multipart spellings of one call compare equal, files by content, and a repeat is dropped only
 * right after itself and only while its method has ambiguous attempts left, moving later message
 * ids back by the messages the repeat created.
 */
import type { CallRecord } from '../../../libs/sandbox';
import { collapsedView, describeCall } from '../../integration/dispatch/differential-helpers';

let seq = 0;
function call(method: string, params: Record<string, unknown>, extra: Partial<CallRecord> = {}): CallRecord {
  return {
    seq: ++seq,
    bot_id: 1,
    method,
    params,
    time: 0,
    duration_ms: 0,
    outcome: 'ok',
    status: 200,
    via: 'http',
    ...extra,
  };
}
const file = (part: string, sha256: string) => ({ part, filename: `${sha256}.bin`, size: 1, sha256 });

it('a JSON call and its multipart spelling describe the same; different bytes do not', () => {
  const json = call('sendPhoto', {
    chat_id: 5,
    photo: 'attach://photo',
    caption: 'x',
    show_caption_above_media: false,
  });
  json.files = [file('photo', 'aa')];
  const multipart = call('sendPhoto', {
    chat_id: '5',
    caption: 'x',
    method: 'sendPhoto',
    show_caption_above_media: 'false',
  });
  multipart.files = [file('photo', 'aa')];
  expect(describeCall(multipart)).toBe(describeCall(json));
  multipart.files = [file('photo', 'bb')];
  expect(describeCall(multipart)).not.toBe(describeCall(json));
  const album = (parts: string[]) => {
    const c = call('sendMediaGroup', {
      chat_id: 5,
      media: parts.map((p) => ({ type: 'photo', media: `attach://${p}` })),
    });
    c.files = parts.map((p, i) => file(p, `f${i}`));
    return describeCall(c);
  };
  expect(album(['r1', 'r2'])).toBe(album(['q7', 'q8'])); // random part names
});

it('drops a repeat of an ambiguous send and moves the later ids back by its messages', () => {
  const album = () =>
    call('sendMediaGroup', {
      chat_id: 5,
      media: [
        { type: 'photo', media: 'u1' },
        { type: 'photo', media: 'u2' },
      ],
    });
  const records = [
    call('sendMessage', { chat_id: 5, text: 'a' }), // id 4
    album(), // ids 5, 6 — taken, answer lost
    album(), // ids 7, 8 — the repeat, recorded
    call('editMessageText', { chat_id: 5, message_id: 7, text: 'b' }),
    call('deleteMessage', { chat_id: 5, message_id: 4 }),
  ];
  const { view, dropped } = collapsedView(records, new Map([['sendMediaGroup', 1]]), 4);
  expect(dropped).toHaveLength(1);
  expect(view.calls.map((c) => c.split(' ')[0])).toEqual([
    'sendMessage',
    'sendMediaGroup',
    'editMessageText',
    'deleteMessage',
  ]);
  expect(view.calls[2]).toContain('"message_id":"5"');
  expect(view.calls[3]).toContain('"message_id":"4"');
});

it('keeps a repeat without an ambiguous attempt of its method, or not right after itself', () => {
  const a = () => call('sendMessage', { chat_id: 5, text: 'a' });
  expect(collapsedView([a(), a()], new Map(), 4).view.calls).toHaveLength(2);
  expect(collapsedView([a(), a()], new Map([['editMessageText', 3]]), 4).view.calls).toHaveLength(2);
  const b = call('sendMessage', { chat_id: 5, text: 'b' });
  expect(collapsedView([a(), b, a()], new Map([['sendMessage', 3]]), 4).view.calls).toHaveLength(3);
  expect(collapsedView([a(), a(), a()], new Map([['sendMessage', 1]]), 4).view.calls).toHaveLength(2);
});

it('keeps refusals apart, with what Telegram answered', () => {
  const refused = call(
    'deleteMessage',
    { chat_id: 5, message_id: 9 },
    { status: 400, description: 'Bad Request: message to delete not found' },
  );
  const { view } = collapsedView([refused], new Map(), 4);
  expect(view.calls).toEqual([]);
  expect(view.refused).toEqual([
    expect.stringMatching(/^deleteMessage .* → 400 Bad Request: message to delete not found$/),
  ]);
});
