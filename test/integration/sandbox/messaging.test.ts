/** sendMessage & co: result shape, validations, scripted chat errors, callbacks, telegraf as a client. */
import { Telegram } from 'telegraf';
import { createBotApiSandbox, TG_DESCRIPTIONS, type BotApiSandbox } from '../../../libs/sandbox';
import { tg } from '../../support/sandbox-helpers';

const TOKEN = '3131:messaging-secret';

describe('sandbox messaging', () => {
  let sb: BotApiSandbox;
  let api: string;

  beforeEach(async () => {
    sb = createBotApiSandbox({ limits: { enabled: false } });
    api = await sb.start();
  });
  afterEach(async () => {
    await sb.stop();
  });

  it('returns a Message from the bot with per-chat increasing message_ids and records what was sent', async () => {
    const a1 = await tg(api, TOKEN, 'sendMessage', {
      chat_id: 10,
      text: 'first',
      parse_mode: 'HTML',
      disable_notification: true,
    });
    const a2 = await tg(api, TOKEN, 'sendMessage', {
      chat_id: '10',
      text: 'second',
      reply_markup: { inline_keyboard: [[{ text: 'ok', callback_data: 'y' }]] },
    });
    const b1 = await tg(api, TOKEN, 'sendMessage', { chat_id: -20, text: 'group' });
    expect(a1.status).toBe(200);
    expect(a1.body.result).toMatchObject({
      message_id: 1,
      from: { id: 3131, is_bot: true, username: 'sandbox_3131_bot' },
      chat: { id: 10, type: 'private' },
      text: 'first',
    });
    expect(Math.abs(a1.body.result.date - Date.now() / 1000)).toBeLessThan(5);
    expect(a2.body.result.message_id).toBe(2);
    expect(b1.body.result).toMatchObject({ message_id: 1, chat: { id: -20, type: 'group' } });
    const sent = sb.sent(TOKEN);
    expect(sent.map((s) => [s.method, s.chat_id, s.message_id, s.text])).toEqual([
      ['sendMessage', 10, 1, 'first'],
      ['sendMessage', 10, 2, 'second'],
      ['sendMessage', -20, 1, 'group'],
    ]);
    expect(sent[0]).toMatchObject({ parse_mode: 'HTML', disable_notification: true });
    expect(sent[1].reply_markup).toEqual({ inline_keyboard: [[{ text: 'ok', callback_data: 'y' }]] });
  });

  it('shares the message_id sequence of a chat with injected user messages and supports replies', async () => {
    const u = sb.injectMessage(TOKEN, { chatId: 5, text: 'hi' });
    expect(u.message!.message_id).toBe(1);
    const r = await tg(api, TOKEN, 'sendMessage', { chat_id: 5, text: 'hello', reply_parameters: { message_id: 1 } });
    expect(r.body.result).toMatchObject({ message_id: 2, reply_to_message: { message_id: 1 } });
    const bad = await tg(api, TOKEN, 'sendMessage', { chat_id: 5, text: 'x', reply_to_message_id: 99 });
    expect([bad.status, bad.body.description]).toEqual([400, TG_DESCRIPTIONS.replyNotFound]);
    const allowed = await tg(api, TOKEN, 'sendMessage', {
      chat_id: 5,
      text: 'x',
      reply_parameters: { message_id: 99, allow_sending_without_reply: true },
    });
    expect(allowed.status).toBe(200);
  });

  it('sends to @channel usernames', async () => {
    const r = await tg(api, TOKEN, 'sendMessage', { chat_id: '@news', text: 'post' });
    expect(r.body.result.chat).toMatchObject({ type: 'channel', username: 'news' });
    expect(r.body.result.chat.id).toBeLessThan(-1_000_000_000_000);
    expect(sb.sent(TOKEN)[0]).toMatchObject({ chat_id: '@news', resolved_chat_id: r.body.result.chat.id });
  });

  it.each([
    ['empty text', { chat_id: 1, text: '' }, 400, 'Bad Request: message text is empty'],
    ['whitespace text', { chat_id: 1, text: '  \n ' }, 400, 'Bad Request: message text is empty'],
    ['missing text', { chat_id: 1 }, 400, 'Bad Request: message text is empty'],
    ['text over 4096', { chat_id: 1, text: 'x'.repeat(4097) }, 400, 'Bad Request: message is too long'],
    [
      'unknown parse_mode',
      { chat_id: 1, text: 'hi', parse_mode: 'BBCode' },
      400,
      'Bad Request: unsupported parse_mode',
    ],
    ['missing chat_id', { text: 'hi' }, 400, 'Bad Request: chat_id is empty'],
    ['bad chat_id', { chat_id: 'nobody', text: 'hi' }, 400, 'Bad Request: chat not found'],
  ])('rejects %s', async (_name, params, status, description) => {
    const r = await tg(api, TOKEN, 'sendMessage', params);
    expect(r.status).toBe(status);
    expect(r.body).toEqual({ ok: false, error_code: status, description });
    expect(sb.sent(TOKEN)).toHaveLength(0);
  });

  it('accepts exactly 4096 characters, and counts HTML text after removing tags', async () => {
    expect((await tg(api, TOKEN, 'sendMessage', { chat_id: 1, text: 'x'.repeat(4096) })).status).toBe(200);
    const html = `<b>${'y'.repeat(4096)}</b>`;
    expect((await tg(api, TOKEN, 'sendMessage', { chat_id: 1, text: html, parse_mode: 'html' })).status).toBe(200);
    expect(
      (await tg(api, TOKEN, 'sendMessage', { chat_id: 1, text: '<b></b>', parse_mode: 'HTML' })).body.description,
    ).toBe(TG_DESCRIPTIONS.textEmpty);
  });

  it('answers scripted chat errors as Telegram does', async () => {
    sb.scriptChatError(TOKEN, 100, { kind: 'chat_not_found' });
    sb.scriptChatError(TOKEN, 200, 'blocked');
    sb.scriptChatError(TOKEN, -300, { kind: 'migrated', migrateToChatId: -1001234567890 });
    sb.scriptChatError(TOKEN, 400, 'deactivated');
    sb.scriptChatError(undefined, 500, {
      kind: 'custom',
      error_code: 400,
      description: 'Bad Request: something',
      parameters: { retry_after: 1 },
    });

    const send = (chat_id: number) => tg(api, TOKEN, 'sendMessage', { chat_id, text: 'hi' });
    expect((await send(100)).body).toEqual({ ok: false, error_code: 400, description: 'Bad Request: chat not found' });
    const blocked = await send(200);
    expect([blocked.status, blocked.body]).toEqual([
      403,
      { ok: false, error_code: 403, description: 'Forbidden: bot was blocked by the user' },
    ]);
    expect((await send(-300)).body).toEqual({
      ok: false,
      error_code: 400,
      description: 'Bad Request: group chat was upgraded to a supergroup chat',
      parameters: { migrate_to_chat_id: -1001234567890 },
    });
    expect((await send(400)).body).toEqual({
      ok: false,
      error_code: 403,
      description: 'Forbidden: user is deactivated',
    });
    // A global script applies to every bot.
    expect((await tg(api, '1:other', 'sendMessage', { chat_id: 500, text: 'x' })).body.parameters).toEqual({
      retry_after: 1,
    });
    // The new supergroup id works; nothing was recorded for the failures.
    expect((await send(-1001234567890)).status).toBe(200);
    expect(sb.sent(TOKEN).map((s) => s.chat_id)).toEqual([-1001234567890]);

    sb.scriptChatError(TOKEN, 200, null);
    expect((await send(200)).status).toBe(200);
  });

  it('scripted errors with `times` apply that many times only', async () => {
    sb.scriptChatError(TOKEN, 9, { kind: 'blocked', times: 2 });
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await tg(api, TOKEN, 'sendMessage', { chat_id: 9, text: 'x' })).status);
    expect(statuses).toEqual([403, 403, 200]);
  });

  it('edits messages the bot sent', async () => {
    const sent = (await tg(api, TOKEN, 'sendMessage', { chat_id: 4, text: 'v1' })).body.result;
    const edited = await tg(api, TOKEN, 'editMessageText', { chat_id: 4, message_id: sent.message_id, text: 'v2' });
    expect(edited.body.result).toMatchObject({ message_id: sent.message_id, text: 'v2' });
    expect(edited.body.result.edit_date).toBeGreaterThan(0);
    const same = await tg(api, TOKEN, 'editMessageText', { chat_id: 4, message_id: sent.message_id, text: 'v2' });
    expect(same.body.description).toMatch(/^Bad Request: message is not modified/);
    const missing = await tg(api, TOKEN, 'editMessageText', { chat_id: 4, message_id: 77, text: 'v3' });
    expect(missing.body.description).toBe('Bad Request: message to edit not found');
    expect(sb.sent(TOKEN).map((s) => [s.method, s.text])).toEqual([
      ['sendMessage', 'v1'],
      ['editMessageText', 'v2'],
    ]);
  });

  it('injects callback queries carrying the bot message, and answers them once', async () => {
    const msg = (
      await tg(api, TOKEN, 'sendMessage', {
        chat_id: 6,
        text: 'pick',
        reply_markup: { inline_keyboard: [[{ text: 'A', callback_data: 'a' }]] },
      })
    ).body.result;
    const u = sb.injectCallbackQuery(TOKEN, { chatId: 6, data: 'a', messageId: msg.message_id });
    expect(u.callback_query).toMatchObject({
      data: 'a',
      from: { id: 6 },
      message: { message_id: msg.message_id, text: 'pick' },
    });
    const updates = (await tg(api, TOKEN, 'getUpdates')).body.result;
    expect(updates[0].callback_query.id).toBe(u.callback_query!.id);
    const ok = await tg(api, TOKEN, 'answerCallbackQuery', { callback_query_id: u.callback_query!.id, text: 'done' });
    expect(ok.body).toEqual({ ok: true, result: true });
    const again = await tg(api, TOKEN, 'answerCallbackQuery', { callback_query_id: u.callback_query!.id });
    expect(again.body.description).toBe(TG_DESCRIPTIONS.queryInvalid);
    expect(sb.answeredCallbacks(TOKEN)).toEqual([{ callback_query_id: u.callback_query!.id, text: 'done' }]);
  });

  it('marks leading commands with a bot_command entity', () => {
    const u = sb.injectMessage(TOKEN, { chatId: 1, text: '/start@sandbox_3131_bot now' });
    expect(u.message!.entities).toEqual([{ type: 'bot_command', offset: 0, length: 23 }]);
    expect(sb.injectMessage(TOKEN, { chatId: 1, text: 'plain' }).message!.entities).toBeUndefined();
  });

  it('works as the apiRoot of telegraf’s Telegram client', async () => {
    const telegram = new Telegram(TOKEN, { apiRoot: api });
    const me = await telegram.getMe();
    expect(me).toMatchObject({ id: 3131, is_bot: true });
    const m = await telegram.sendMessage(77, 'via telegraf', { parse_mode: 'MarkdownV2' });
    expect(m).toMatchObject({ message_id: 1, chat: { id: 77 }, text: 'via telegraf' });
    sb.scriptChatError(TOKEN, 78, 'blocked');
    await expect(telegram.sendMessage(78, 'x')).rejects.toMatchObject({
      code: 403,
      description: TG_DESCRIPTIONS.blocked,
    });
  });
});
