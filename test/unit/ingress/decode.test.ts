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
    ['a chat id that is a string', raw({ ...makeMessageUpdate({ updateId: 5 }), message: { ...makeMessageUpdate({ updateId: 5 }).message, chat: { id: '1', type: 'private' } } }), 5, '$.message.chat.id'],
    ['text that is a number', raw({ ...makeMessageUpdate({ updateId: 6 }), message: { ...makeMessageUpdate({ updateId: 6 }).message, text: 12 } }), 6, '$.message.text'],
    ['a callback without from', raw({ update_id: 8, callback_query: { id: 'x', chat_instance: '1' } }), 8, '$.callback_query.from'],
    ['a NUL character', raw(makeMessageUpdate({ updateId: 9, text: 'a\u0000b' })), 9, '$'],
  ])('rejects %s with the JSON path and no payload in the error', (_what, text, updateId, jsonPath) => {
    const r = decodeUpdate(text);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.failure).toMatchObject({ updateId, jsonPath, raw: text });
    expect(r.failure.error).not.toMatch(/hello|Ann/);
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
