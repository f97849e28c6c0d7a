import { decodeUpdate, isAuthorized } from '../../../libs/ingress/decode';
import { makeCallbackUpdate, makeMessageUpdate } from '../../support/ingress-fixtures';

const raw = (v: unknown) => JSON.stringify(v);

describe('decodeUpdate', () => {
  it('decodes a message update: kind, chat, sender and the message', () => {
    const r = decodeUpdate(raw(makeMessageUpdate({ updateId: 7, chatId: -55, fromId: 9, text: 'hi' })));
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.update).toMatchObject({ updateId: 7, type: 'message', chatId: -55, fromId: 9 });
    expect(r.update.message?.text).toBe('hi');
  });

  it('takes the chat of a callback query from its message and the user from `from`', () => {
    const r = decodeUpdate(raw(makeCallbackUpdate({ updateId: 3, chatId: 44, fromId: 45 })));
    expect(r).toMatchObject({ ok: true, update: { type: 'callback_query', chatId: 44, fromId: 45, message: null } });
  });

  it('lets unknown update kinds and unknown fields through', () => {
    const r = decodeUpdate(raw({ update_id: 1, message_reaction_v9: { anything: [1, 2] } }));
    expect(r).toMatchObject({ ok: true, update: { type: 'message_reaction_v9', chatId: null } });
    const m = makeMessageUpdate({ updateId: 2 });
    m.message.some_future_field = { x: 1 };
    expect(decodeUpdate(raw(m)).ok).toBe(true);
  });

  it.each([
    ['not JSON', 'nope', null, '$'],
    ['an array', '[1]', null, '$'],
    ['no update_id', raw({ message: {} }), null, '$.update_id'],
    ['a string update_id', raw({ update_id: '5' }), null, '$.update_id'],
    ['a fractional update_id', raw({ update_id: 5.5 }), null, '$.update_id'],
    [
      'a chat id that is a string',
      raw({
        ...makeMessageUpdate({ updateId: 5 }),
        message: { ...makeMessageUpdate({ updateId: 5 }).message, chat: { id: '1', type: 'private' } },
      }),
      5,
      '$.message.chat.id',
    ],
    [
      'text that is a number',
      raw({
        ...makeMessageUpdate({ updateId: 6 }),
        message: { ...makeMessageUpdate({ updateId: 6 }).message, text: 12 },
      }),
      6,
      '$.message.text',
    ],
    [
      'a callback without from',
      raw({ update_id: 8, callback_query: { id: 'x', chat_instance: '1' } }),
      8,
      '$.callback_query.from',
    ],
  ])('rejects %s with the JSON path and no payload in the error', (_what, text, updateId, jsonPath) => {
    const r = decodeUpdate(text);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.failure).toMatchObject({ updateId, jsonPath, raw: text });
    expect(r.failure.error).not.toMatch(/hello|Ann/);
  });
});

describe('decodeUpdate: content is data', () => {
  const typedByUser = 'see C:\\u0000dir'; // the six characters backslash u 0 0 0 0, as typed
  it.each([
    ['text that looks like a NUL escape', typedByUser],
    ['a real NUL', 'a\u0000b'],
    ['a lone high surrogate (an emoji cut in half)', 'cut \ud83d'],
    ['a lone low surrogate', '\ude00 tail'],
    ['RTL marks and escapes', '\u202eevil\u200f \\ud800 "quoted"'],
  ])(
    'decodes %s: the parsed update holds the exact text, the jsonb copy holds none of what jsonb refuses',
    (_what, text) => {
      const u = makeMessageUpdate({ updateId: 21, text });
      const r = decodeUpdate(raw(u));
      expect(r.ok).toBe(true);
      if (!r.ok) return;
      expect(r.update.message?.text).toBe(text);
      expect(JSON.parse(r.update.raw)).toEqual(u);
      expect(r.update.raw).toBe(raw(u));
      const copy = JSON.parse(r.update.payloadJson);
      expect(copy.message.chat).toEqual(u.message.chat);
      // matches NUL on purpose: the jsonb copy must never contain one
      // eslint-disable-next-line no-control-regex -- NUL is what this pattern is for
      const unstorable = /[\u0000]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
      expect(copy.message.text).not.toMatch(unstorable);
    },
  );

  it('never judges user strings, nor fields the relay does not read (names, callback data, queries)', () => {
    const cb = makeCallbackUpdate({ updateId: 30, data: '\u0000' }) as {
      callback_query: { data: unknown; from: { first_name?: string } };
    };
    cb.callback_query.data = 12; // a type Telegram never sends, in a field only handlers read
    delete cb.callback_query.from.first_name;
    expect(decodeUpdate(raw(cb)).ok).toBe(true);
    expect(
      decodeUpdate(raw({ update_id: 31, inline_query: { id: 5, from: { id: 7 }, query: '\ud800' } })),
    ).toMatchObject({ ok: true, update: { fromId: 7 } });
    expect(
      decodeUpdate(raw({ update_id: 32, my_chat_member: { chat: { id: -4 }, from: { id: 7 }, date: 'x' } })),
    ).toMatchObject({
      ok: true,
      update: { chatId: -4 },
    });
  });

  it('an unknown update kind whose name holds a NUL is stored under a storable type name', () => {
    const r = decodeUpdate('{"update_id":40,"odd\\u0000kind":{}}');
    expect(r).toMatchObject({ ok: true, update: { type: 'odd\ufffdkind' } });
  });
});

describe('isAuthorized', () => {
  const allow = new Set(['10', '-20']);
  it('allows everything when the allow-list is empty', () => {
    expect(isAuthorized({ chatId: 99, fromId: 99 }, new Set())).toBe(true);
  });
  it('checks the chat, or the user when there is no chat', () => {
    expect(isAuthorized({ chatId: 10, fromId: 1 }, allow)).toBe(true);
    expect(isAuthorized({ chatId: -20, fromId: 1 }, allow)).toBe(true);
    expect(isAuthorized({ chatId: 11, fromId: 10 }, allow)).toBe(false);
    expect(isAuthorized({ chatId: null, fromId: 10 }, allow)).toBe(true);
    expect(isAuthorized({ chatId: null, fromId: null }, allow)).toBe(false);
  });
});
