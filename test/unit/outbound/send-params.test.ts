import { loadConfig } from '../../../libs/config';
import { replyToMessage } from '../../../libs/outbound/replies';
import { chatIdParam, sendMessageParams } from '../../../libs/outbound/send-message';

describe('sendMessage parameters', () => {
  it('send the text verbatim, integer chats as numbers, and only the options that are set', () => {
    expect(
      sendMessageParams({
        target_chat_id: '-100123',
        text: '<b>x</b> &amp; *y*',
        parse_mode: 'HTML',
        disable_notification: false,
        reply_markup: null,
        send_options: null,
      }),
    ).toEqual({
      chat_id: -100123,
      text: '<b>x</b> &amp; *y*',
      parse_mode: 'HTML',
    });
    expect(
      sendMessageParams({
        target_chat_id: '@chan',
        text: 't',
        parse_mode: null,
        disable_notification: true,
        reply_markup: { inline_keyboard: [] },
        send_options: { message_thread_id: 3 },
      }),
    ).toEqual({
      chat_id: '@chan',
      text: 't',
      disable_notification: true,
      reply_markup: { inline_keyboard: [] },
      message_thread_id: 3,
    });
    expect(chatIdParam('99999999999999999')).toBe('99999999999999999');
  });

  it('turn a captured handler reply into a kind=reply message keeping its other parameters', () => {
    const m = replyToMessage({
      msgId: 'update:1:10:1',
      botId: '1',
      chatId: '5',
      text: 'hi',
      parseMode: 'HTML',
      sourceUpdateId: 10,
      payload: {
        chat_id: 5,
        text: 'hi',
        parse_mode: 'HTML',
        message_thread_id: undefined,
        reply_parameters: { message_id: 3 },
      },
    });
    expect(m).toEqual({
      msg_id: 'update:1:10:1',
      bot_id: '1',
      chat_id: '5',
      text: 'hi',
      parse_mode: 'HTML',
      disable_notification: null,
      reply_markup: null,
      send_options: { reply_parameters: { message_id: 3 } },
      kind: 'reply',
      delivery: 'at_least_once',
      source_update_id: 10,
    });
  });
});

describe('outbound configuration', () => {
  it('defaults to proactive limits of 30/s per bot, 1/s per chat, 20/min per group', () => {
    const c = loadConfig({});
    expect(c.OUTBOUND_RATE_MODE).toBe('proactive');
    expect(c.OUTBOUND_RATE_PER_BOT).toEqual({ count: 30, windowMs: 1000 });
    expect(c.OUTBOUND_RATE_PER_CHAT).toEqual({ count: 1, windowMs: 1000 });
    expect(c.OUTBOUND_RATE_PER_GROUP).toEqual({ count: 20, windowMs: 60_000 });
    expect(c.OUTBOUND_SEND_TIMEOUT).toBe(15_000);
  });

  it('parses COUNT/WINDOW and names a bad variable', () => {
    expect(loadConfig({ OUTBOUND_RATE_PER_BOT: '100/s', OUTBOUND_RATE_PER_GROUP: '10/30s' })).toMatchObject({
      OUTBOUND_RATE_PER_BOT: { count: 100, windowMs: 1000 },
      OUTBOUND_RATE_PER_GROUP: { count: 10, windowMs: 30_000 },
    });
    expect(() => loadConfig({ OUTBOUND_RATE_PER_CHAT: 'fast' })).toThrow(
      /OUTBOUND_RATE_PER_CHAT: expected .*COUNT\/WINDOW/,
    );
    expect(() => loadConfig({ OUTBOUND_RATE_PER_CHAT: '0/1s' })).toThrow(/OUTBOUND_RATE_PER_CHAT/);
    expect(() => loadConfig({ OUTBOUND_RATE_MODE: 'psychic' })).toThrow(/OUTBOUND_RATE_MODE/);
  });
});
