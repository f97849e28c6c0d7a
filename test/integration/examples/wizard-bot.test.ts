/** examples/wizard-bot.ts on plain telegraf against the sandbox: three steps across three updates. */
import wizardBot from '../../../examples/wizard-bot';
import { startExample, TOKEN, type ExampleHarness } from './harness';

const CHAT = 6004;

let h: ExampleHarness;
beforeEach(async () => {
  h = await startExample(wizardBot);
});
afterEach(() => h.stop());

const replies = () => h.sandbox.sent(TOKEN).map((s) => s.text);

describe('wizard bot', () => {
  it('asks name, then age, then confirms; invalid input repeats the step', async () => {
    await h.say(CHAT, '/signup');
    await h.say(CHAT, 'Ada');
    await h.say(CHAT, 'old');
    await h.say(CHAT, '36');
    await h.say(CHAT, 'after the wizard');
    expect(replies()).toEqual([
      'What is your name?',
      'How old are you, Ada?',
      'Please send your age as a number.',
      'Thanks, Ada: signed up at 36.',
    ]);
    expect(h.calls().every((c) => c.method === 'sendMessage' && c.status === 200)).toBe(true);
  });

  it('/cancel leaves the wizard at any step; another chat has its own wizard', async () => {
    await h.say(CHAT, '/signup');
    await h.say(CHAT + 1, '/signup');
    await h.say(CHAT, '/cancel');
    await h.say(CHAT + 1, 'Bob');
    await h.say(CHAT, 'ignored');
    expect(h.sandbox.sent(TOKEN).map((s) => [s.resolved_chat_id, s.text])).toEqual([
      [CHAT, 'What is your name?'],
      [CHAT + 1, 'What is your name?'],
      [CHAT, 'Sign-up cancelled.'],
      [CHAT + 1, 'How old are you, Bob?'],
    ]);
  });
});
