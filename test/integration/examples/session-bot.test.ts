/** examples/session-bot.ts on plain telegraf against the sandbox: a per-user counter in any store. */
import { MemorySessionStore } from 'telegraf';
import sessionBot, { createSessionBot, type CounterSession } from '../../../examples/session-bot';
import { startExample, TOKEN, type ExampleHarness } from './harness';

let h: ExampleHarness | undefined;
afterEach(() => h?.stop());

const texts = (x: ExampleHarness) => x.sandbox.sent(TOKEN).map((s) => [s.resolved_chat_id, s.text]);

describe('session bot', () => {
  it('counts per chat with the default in-memory store; /reset starts over', async () => {
    h = await startExample(sessionBot);
    await h.say(1, '/count');
    await h.say(1, '/count');
    await h.say(2, '/count');
    await h.say(1, '/reset');
    await h.say(1, '/count');
    expect(texts(h)).toEqual([
      [1, 'Count: 1'],
      [1, 'Count: 2'],
      [2, 'Count: 1'],
      [1, 'Count reset.'],
      [1, 'Count: 1'],
    ]);
  });

  it('keeps its sessions in the store it is given (the seam for dispatch.sessionStore())', async () => {
    const store = new MemorySessionStore<CounterSession>();
    const writes: string[] = [];
    const spy = {
      get: (k: string) => store.get(k),
      set: (k: string, v: CounterSession) => (writes.push(k), store.set(k, v)),
      delete: (k: string) => store.delete(k),
    };
    h = await startExample(createSessionBot({ store: spy }));
    await h.say(7, '/count');
    await h.say(7, '/count');
    expect(store.get('7:7')).toEqual({ count: 2 });
    expect(writes).toEqual(['7:7', '7:7']);
    // a second bot process on the same store continues the count
    await h.stop();
    h = await startExample(createSessionBot({ store: spy }));
    await h.say(7, '/count');
    expect(texts(h)).toEqual([[7, 'Count: 3']]);
  });
});
