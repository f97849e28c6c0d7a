/** examples/keyboard-bot.ts on plain telegraf against the sandbox: keyboard, answers, edit, reaction. */
import keyboardBot, { colourKeyboard } from '../../../examples/keyboard-bot';
import { startExample, TOKEN, type ExampleHarness } from './harness';

const CHAT = 6002;

let h: ExampleHarness;
beforeEach(async () => {
  h = await startExample(keyboardBot);
});
afterEach(() => h.stop());

describe('keyboard bot', () => {
  it('/menu sends the inline keyboard; a press answers the query and edits that message', async () => {
    await h.say(CHAT, '/menu');
    const menu = h.sandbox.sent(TOKEN)[0];
    expect(menu).toMatchObject({
      method: 'sendMessage',
      text: 'Pick a colour',
      reply_markup: colourKeyboard().reply_markup,
    });

    const press = await h.press(CHAT, 'colour:green', menu.message_id);
    const [, answer, edit] = h.calls();
    expect(answer).toMatchObject({
      method: 'answerCallbackQuery',
      status: 200,
      params: { callback_query_id: press.callback_query!.id, text: 'You picked green' },
    });
    expect(edit).toMatchObject({
      method: 'editMessageText',
      status: 200,
      params: { chat_id: CHAT, message_id: menu.message_id, text: 'Colour: green' },
    });
    expect(edit.params.reply_markup).toEqual(colourKeyboard('green').reply_markup);
    expect(h.sandbox.answeredCallbacks(TOKEN)).toEqual([
      { callback_query_id: press.callback_query!.id, text: 'You picked green' },
    ]);
  });

  it('reacts 👍 to any other text', async () => {
    const u = await h.say(CHAT, 'hello');
    const [react] = h.calls();
    expect(react).toMatchObject({
      method: 'setMessageReaction',
      status: 200,
      params: { chat_id: CHAT, message_id: u.message!.message_id },
    });
    expect(react.params.reaction).toEqual([{ type: 'emoji', emoji: '👍' }]);
  });

  it('a button of an older keyboard is still answered (autoAnswerCallbacks)', async () => {
    await h.say(CHAT, '/menu');
    const menu = h.sandbox.sent(TOKEN)[0];
    await h.press(CHAT, 'colour:purple', menu.message_id);
    expect(h.calls().map((c) => [c.method, c.status])).toEqual([
      ['sendMessage', 200],
      ['answerCallbackQuery', 200],
    ]);
  });
});
