import { isRelayed, messageCount, methodClass } from '../../../libs/telegram/methods';

describe('relayed Bot API methods', () => {
  it('relays every method that sends, edits, deletes, pins or reacts, and answers queries', () => {
    for (const m of [
      'sendMessage',
      'sendPhoto',
      'sendMediaGroup',
      'copyMessage',
      'forwardMessages',
      'editMessageText',
      'editMessageMedia',
      'deleteMessage',
      'pinChatMessage',
      'unpinAllChatMessages',
      'setMessageReaction',
      'stopPoll',
    ])
      expect(methodClass(m)).toBe('message');
    for (const m of [
      'answerCallbackQuery',
      'answerInlineQuery',
      'answerPreCheckoutQuery',
      'answerShippingQuery',
      'answerWebAppQuery',
    ])
      expect(methodClass(m)).toBe('answer');
  });

  it('keeps reads, chat actions and administration direct', () => {
    for (const m of [
      'getChat',
      'getChatMember',
      'getFile',
      'getMe',
      'sendChatAction',
      'banChatMember',
      'setMyCommands',
    ])
      expect(isRelayed(m)).toBe(false);
  });

  it('treats a name telegraf does not know, or an inherited property name, as direct', () => {
    for (const m of ['sendTelepathy', 'constructor', '__proto__', 'toString', ''])
      expect(methodClass(m)).toBe('direct');
  });

  it('counts an album or a batch forward as its messages, an answer as none', () => {
    expect(messageCount('sendMessage', {})).toBe(1);
    expect(messageCount('sendMediaGroup', { media: [{}, {}, {}] })).toBe(3);
    expect(messageCount('forwardMessages', { message_ids: [1, 2] })).toBe(2);
    expect(messageCount('copyMessages', { message_ids: 'not a list' })).toBe(1);
    expect(messageCount('answerCallbackQuery', {})).toBe(0);
    expect(messageCount('getChat', {})).toBe(0);
  });
});
