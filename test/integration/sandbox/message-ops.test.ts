/**
 * Methods on existing messages: copies/forwards, caption / reply markup / media edits, batch
 * deletes, pins, reactions, query answers, and answerCallbackQuery's "too old" bound.
 */
import { createBotApiSandbox, TG_DESCRIPTIONS, type BotApiSandbox } from '../../../libs/sandbox';
import { tg } from '../../support/sandbox-helpers';

const TOKEN = '3333:ops-secret';
const CHAT = 42;
const OTHER = 43;

let sb: BotApiSandbox;
let api: string;

beforeEach(async () => {
  sb = createBotApiSandbox({ limits: { enabled: false } });
  api = await sb.start();
});
afterEach(async () => {
  await sb.stop();
});

const call = (method: string, params: Record<string, unknown>) => tg(api, TOKEN, method, params);
const photo = async (caption?: string) =>
  (await call('sendPhoto', { chat_id: CHAT, photo: 'https://example.com/p.jpg', caption })).body.result;

describe('copies and forwards', () => {
  it('copyMessage answers {message_id} in the target chat; forwardMessage a Message with forward_origin', async () => {
    const user = sb.injectMessage(TOKEN, { chatId: CHAT, text: 'from the user' }).message!;
    const copy = await call('copyMessage', { chat_id: OTHER, from_chat_id: CHAT, message_id: user.message_id });
    expect(copy.body).toEqual({ ok: true, result: { message_id: 1 } });
    const fwd = await call('forwardMessage', { chat_id: OTHER, from_chat_id: CHAT, message_id: user.message_id });
    expect(fwd.body.result).toMatchObject({
      message_id: 2,
      chat: { id: OTHER },
      text: 'from the user',
      forward_origin: { type: 'user', sender_user: { id: CHAT } },
    });
    const missing = await call('copyMessage', { chat_id: OTHER, from_chat_id: CHAT, message_id: 999 });
    expect([missing.status, missing.body.description]).toEqual([400, 'Bad Request: message to copy not found']);
    const fwdMissing = await call('forwardMessage', { chat_id: OTHER, from_chat_id: CHAT, message_id: 999 });
    expect(fwdMissing.body.description).toBe('Bad Request: message to forward not found');
    expect(sb.sent(TOKEN).map((s) => [s.method, s.resolved_chat_id, s.message_id, s.text])).toEqual([
      ['copyMessage', OTHER, 1, 'from the user'],
      ['forwardMessage', OTHER, 2, 'from the user'],
    ]);
  });

  it('copyMessages / forwardMessages skip missing ids and answer MessageId[] in id order', async () => {
    const a = (await call('sendMessage', { chat_id: CHAT, text: 'a' })).body.result.message_id;
    const b = await photo('b');
    const r = await call('copyMessages', { chat_id: OTHER, from_chat_id: CHAT, message_ids: [b.message_id, 77, a] });
    expect(r.body.result).toEqual([{ message_id: 1 }, { message_id: 2 }]);
    expect(
      sb
        .sent(TOKEN)
        .slice(-2)
        .map((s) => s.text),
    ).toEqual(['a', '[photo] b']);
    const f = await call('forwardMessages', { chat_id: OTHER, from_chat_id: CHAT, message_ids: JSON.stringify([a]) });
    expect(f.body.result).toEqual([{ message_id: 3 }]);
    expect((await call('copyMessages', { chat_id: OTHER, from_chat_id: CHAT })).body.description).toBe(
      'Bad Request: message identifiers are not specified',
    );
    const tooMany = Array.from({ length: 101 }, (_, i) => i + 1);
    expect(
      (await call('copyMessages', { chat_id: OTHER, from_chat_id: CHAT, message_ids: tooMany })).body.description,
    ).toBe('Bad Request: too many message identifiers specified');
  });
});

describe('edits', () => {
  it('editMessageCaption / editMessageReplyMarkup / editMessageMedia change the bot’s own media message', async () => {
    const m = await photo('v1');
    const cap = await call('editMessageCaption', { chat_id: CHAT, message_id: m.message_id, caption: 'v2' });
    expect(cap.body.result).toMatchObject({ message_id: m.message_id, caption: 'v2' });
    expect(cap.body.result.edit_date).toBeGreaterThan(0);
    const same = await call('editMessageCaption', { chat_id: CHAT, message_id: m.message_id, caption: 'v2' });
    expect(same.body.description).toBe(TG_DESCRIPTIONS.notModified);
    const markup = { inline_keyboard: [[{ text: 'x', callback_data: 'x' }]] };
    const rm = await call('editMessageReplyMarkup', { chat_id: CHAT, message_id: m.message_id, reply_markup: markup });
    expect(rm.body.result.reply_markup).toEqual(markup);
    const media = await call('editMessageMedia', {
      chat_id: CHAT,
      message_id: m.message_id,
      media: { type: 'document', media: 'https://example.com/d.pdf', caption: 'doc' },
    });
    expect(media.body.result).toMatchObject({ caption: 'doc', document: { file_id: expect.any(String) } });
    expect(media.body.result.photo).toBeUndefined();
    expect(sb.sent(TOKEN).map((s) => [s.method, s.text])).toEqual([
      ['sendPhoto', '[photo] v1'],
      ['editMessageCaption', '[photo] v2'],
      ['editMessageReplyMarkup', '[photo] v2'],
      ['editMessageMedia', '[document] doc'],
    ]);
  });

  it("answers Telegram's 400 for an edit of a user's message, of a missing one and of the wrong kind", async () => {
    const user = sb.injectMessage(TOKEN, { chatId: CHAT, text: 'mine' }).message!;
    for (const [method, extra] of [
      ['editMessageText', { text: 'x' }],
      ['editMessageCaption', { caption: 'x' }],
      ['editMessageReplyMarkup', { reply_markup: { inline_keyboard: [] } }],
    ] as const) {
      const r = await call(method, { chat_id: CHAT, message_id: user.message_id, ...extra });
      expect([method, r.status, r.body.description]).toEqual([method, 400, "Bad Request: message can't be edited"]);
      const gone = await call(method, { chat_id: CHAT, message_id: 500, ...extra });
      expect(gone.body.description).toBe(TG_DESCRIPTIONS.messageToEditNotFound);
    }
    const text = (await call('sendMessage', { chat_id: CHAT, text: 't' })).body.result;
    expect(
      (await call('editMessageCaption', { chat_id: CHAT, message_id: text.message_id, caption: 'c' })).body.description,
    ).toBe(TG_DESCRIPTIONS.noCaptionToEdit);
    const p = await photo();
    expect(
      (await call('editMessageText', { chat_id: CHAT, message_id: p.message_id, text: 'c' })).body.description,
    ).toBe(TG_DESCRIPTIONS.noTextToEdit);
  });
});

describe('deletes, pins, reactions', () => {
  it('deleteMessages forgets the messages (a later edit is "not found"); pins need an existing message', async () => {
    const a = await photo('a');
    const b = await photo('b');
    expect((await call('pinChatMessage', { chat_id: CHAT, message_id: a.message_id })).body).toEqual({
      ok: true,
      result: true,
    });
    expect((await call('pinChatMessage', { chat_id: CHAT, message_id: 404 })).body.description).toBe(
      'Bad Request: message to pin not found',
    );
    expect((await call('unpinChatMessage', { chat_id: CHAT, message_id: 404 })).body.description).toBe(
      'Bad Request: message to unpin not found',
    );
    expect((await call('unpinChatMessage', { chat_id: CHAT })).body.result).toBe(true);
    expect((await call('unpinAllChatMessages', { chat_id: CHAT })).body.result).toBe(true);
    expect(
      (await call('deleteMessages', { chat_id: CHAT, message_ids: [a.message_id, b.message_id, 999] })).body.result,
    ).toBe(true);
    expect(
      (await call('editMessageCaption', { chat_id: CHAT, message_id: a.message_id, caption: 'z' })).body.description,
    ).toBe(TG_DESCRIPTIONS.messageToEditNotFound);
  });

  it('setMessageReaction takes one emoji reaction on an existing message; others are REACTION_INVALID', async () => {
    const user = sb.injectMessage(TOKEN, { chatId: CHAT, text: 'like me' }).message!;
    const ok = await call('setMessageReaction', {
      chat_id: CHAT,
      message_id: user.message_id,
      reaction: [{ type: 'emoji', emoji: '👍' }],
    });
    expect(ok.body).toEqual({ ok: true, result: true });
    const bad = await call('setMessageReaction', {
      chat_id: CHAT,
      message_id: user.message_id,
      reaction: [{ type: 'emoji', emoji: 'x' }],
    });
    expect(bad.body.description).toBe(TG_DESCRIPTIONS.reactionInvalid);
    const missing = await call('setMessageReaction', { chat_id: CHAT, message_id: 900, reaction: [] });
    expect(missing.body.description).toBe('Bad Request: message to react not found');
    expect(sb.calls(TOKEN, { method: 'setMessageReaction' })[0].params.reaction).toEqual([
      { type: 'emoji', emoji: '👍' },
    ]);
  });
});

describe('answers', () => {
  it('answerInlineQuery / answerShippingQuery / answerPreCheckoutQuery answer true and check their fields', async () => {
    const results = [{ type: 'article', id: '1', title: 't', input_message_content: { message_text: 'x' } }];
    expect((await call('answerInlineQuery', { inline_query_id: '123', results })).body).toEqual({
      ok: true,
      result: true,
    });
    expect((await call('answerInlineQuery', { inline_query_id: '', results })).body.description).toBe(
      TG_DESCRIPTIONS.queryInvalid,
    );
    expect(
      (await call('answerShippingQuery', { shipping_query_id: '5', ok: true, shipping_options: [] })).body.result,
    ).toBe(true);
    expect((await call('answerPreCheckoutQuery', { pre_checkout_query_id: '6', ok: true })).body.result).toBe(true);
    expect((await call('answerPreCheckoutQuery', { pre_checkout_query_id: '6', ok: false })).body.description).toBe(
      'Bad Request: parameter "error_message" is required',
    );
  });

  it('answerCallbackQuery: an id never issued, or older than the bound, is "query is too old"', async () => {
    const never = await call('answerCallbackQuery', { callback_query_id: '123456' });
    expect([never.status, never.body.description]).toEqual([400, TG_DESCRIPTIONS.queryInvalid]);
    await sb.stop();
    sb = createBotApiSandbox({ limits: { enabled: false }, callbackQueryTtlSeconds: 0 });
    api = await sb.start();
    const u = sb.injectCallbackQuery(TOKEN, { chatId: CHAT, data: 'x' });
    const old = await call('answerCallbackQuery', { callback_query_id: u.callback_query!.id });
    expect(old.body.description).toBe(
      'Bad Request: query is too old and response timeout expired or query ID is invalid',
    );
  });
});
