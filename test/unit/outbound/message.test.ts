import { OutboundValidationError } from '../../../libs/outbound/errors';
import { isGroupChat, normalizeChatId, validateOutboundMessage } from '../../../libs/outbound/message';

const base = { msg_id: 'm-1', text: 'hello' };

function problems(input: unknown): Record<string, string> {
  try {
    validateOutboundMessage(input);
  } catch (err) {
    expect(err).toBeInstanceOf(OutboundValidationError);
    expect((err as OutboundValidationError).code).toBe('RELAY_OUTBOUND_INVALID');
    return Object.fromEntries((err as OutboundValidationError).problems.map((p) => [p.field, p.problem]));
  }
  throw new Error('expected a validation error');
}

describe('outbound message validation', () => {
  it('accepts a minimal message and fills the defaults (chat omitted = the default chat)', () => {
    expect(validateOutboundMessage(base)).toEqual({
      msgId: 'm-1',
      botId: null,
      chatId: null,
      text: 'hello',
      parseMode: null,
      disableNotification: false,
      replyMarkup: null,
      sendOptions: null,
      kind: 'message',
      delivery: 'at_least_once',
      maxAttempts: null,
      sourceUpdateId: null,
      method: 'sendMessage',
      params: null,
      uploads: [],
      placeholders: null,
      lane: 'interactive',
    });
  });

  it('takes the lane interactive (default) or bulk, and names the field otherwise', () => {
    expect(validateOutboundMessage({ ...base, lane: 'bulk' }).lane).toBe('bulk');
    expect(validateOutboundMessage({ ...base, lane: null }).lane).toBe('interactive');
    for (const lane of ['Bulk', '', 'broadcast', 1, {}])
      expect(problems({ ...base, lane }).lane).toMatch(/interactive, bulk/);
  });

  it('takes text of 1..4096 characters, counted as code points like PostgreSQL', () => {
    expect(validateOutboundMessage({ ...base, text: 'x'.repeat(4096) }).text).toHaveLength(4096);
    expect(validateOutboundMessage({ ...base, text: '😀'.repeat(4096) }).text).toHaveLength(8192); // 4096 code points
    expect(problems({ ...base, text: 'x'.repeat(4097) }).text).toMatch(/1\.\.4096 characters, got 4097/);
    expect(problems({ ...base, text: '' }).text).toMatch(/1\.\.4096/);
    expect(problems({ ...base, text: ' \n\t ' }).text).toMatch(/visible character/);
    expect(problems({ ...base, text: 42 }).text).toMatch(/string/);
  });

  it('takes an integer chat id or @channel, normalised', () => {
    expect(validateOutboundMessage({ ...base, chat_id: 123 }).chatId).toBe('123');
    expect(validateOutboundMessage({ ...base, chat_id: ' -1001234567890 ' }).chatId).toBe('-1001234567890');
    expect(validateOutboundMessage({ ...base, chat_id: '007' }).chatId).toBe('7');
    expect(validateOutboundMessage({ ...base, chat_id: '@my_channel' }).chatId).toBe('@my_channel');
    expect(validateOutboundMessage({ ...base, chat_id: '' }).chatId).toBeNull();
    for (const bad of ['abc', '@abc', '0', 0, 1.5, '12a', '@with-dash', { id: 1 }]) {
      expect(problems({ ...base, chat_id: bad }).chat_id).toMatch(/integer chat id or @channelusername/);
    }
  });

  it('knows the parse modes, case-insensitively, and stores them canonical', () => {
    expect(validateOutboundMessage({ ...base, parse_mode: 'html' }).parseMode).toBe('HTML');
    expect(validateOutboundMessage({ ...base, parse_mode: 'markdownv2' }).parseMode).toBe('MarkdownV2');
    expect(validateOutboundMessage({ ...base, parse_mode: 'Markdown' }).parseMode).toBe('Markdown');
    expect(validateOutboundMessage({ ...base, parse_mode: null }).parseMode).toBeNull();
    expect(problems({ ...base, parse_mode: 'RTF' }).parse_mode).toMatch(/MarkdownV2, HTML, Markdown/);
  });

  it('reports every problem at once, each with its field', () => {
    const p = problems({
      msg_id: '',
      text: '',
      chat_id: 'x',
      parse_mode: 'x',
      kind: 'spam',
      delivery: 'maybe',
      reply_markup: [],
      max_attempts: 0,
      disable_notification: 'yes',
    });
    expect(Object.keys(p).sort()).toEqual([
      'chat_id',
      'delivery',
      'disable_notification',
      'kind',
      'max_attempts',
      'msg_id',
      'parse_mode',
      'reply_markup',
      'text',
    ]);
  });

  it('checks msg_id, kind, delivery, send_options and the rest', () => {
    expect(problems({ ...base, msg_id: 'x'.repeat(257) }).msg_id).toMatch(/1\.\.256/);
    expect(problems(null).message).toMatch(/object/);
    expect(problems({ ...base, send_options: { text: 'x' } }).send_options).toMatch(/must not repeat text/);
    expect(validateOutboundMessage({ ...base, send_options: {} }).sendOptions).toBeNull();
    expect(validateOutboundMessage({ ...base, send_options: { message_thread_id: 7 } }).sendOptions).toEqual({
      message_thread_id: 7,
    });
    expect(validateOutboundMessage({ ...base, kind: 'alert', delivery: 'at_most_once' })).toMatchObject({
      kind: 'alert',
      delivery: 'at_most_once',
    });
    expect(problems({ ...base, bot_id: 'abc' }).bot_id).toMatch(/numeric bot id/);
    expect(validateOutboundMessage({ ...base, bot_id: 123456 }).botId).toBe('123456');
  });

  it('classifies chats for the per-group limit', () => {
    expect(isGroupChat('-100123')).toBe(true);
    expect(isGroupChat('@channel')).toBe(true);
    expect(isGroupChat('42')).toBe(false);
    expect(normalizeChatId(2 ** 60)).toBeUndefined();
  });
});
