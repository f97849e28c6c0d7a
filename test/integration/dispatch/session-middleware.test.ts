/**
 * `dispatch.session()` (no shared in-process cache): a per-user key written from several chats by
 * handlers that REASSIGN `ctx.session` under two engines with concurrency; and telegraf's Scenes on it.
 */
import { Scenes } from 'telegraf';
import { createBoss } from '../../../libs/db';
import type { RegisterHandlers } from '../../../libs/dispatch';
import { storeUpdates } from './helpers';
import { allHandled, barrier, messageFrom, sessionSuite, sessionValue } from './session-helpers';

const suite = sessionSuite('dsp_sess_mw', { defaults: { replyMode: 'outbound', config: { concurrency: 4 } } });

const start = suite.start;

type N = { n?: number } | undefined;

it('a per-user key reassigned from 6 chats under two engines of 4 slots: n equals the number of handled updates', async () => {
  const gate = barrier(4, 300);
  const register: RegisterHandlers = (bot, dispatch) => {
    bot.use(dispatch.session({ getSessionKey: (ctx) => (ctx.from ? String(ctx.from.id) : undefined) }));
    bot.on('message', async (ctx) => {
      const c = ctx as unknown as { session: N };
      await gate(); // let attempts of one key overlap in each engine
      c.session = { n: (c.session?.n ?? 0) + 1 };
      await ctx.reply(`n ${c.session.n}`);
    });
  };
  await start(register);
  await start(register);
  const chats = [-1, -2, -3, -4, -5, -6].map((c) => c - 9800);
  const updates = Array.from({ length: 24 }, (_, i) => messageFrom(i + 1, chats[i % chats.length], 77));
  await storeUpdates(suite.db.pool, createBoss(suite.db.url, { max: 1 }), updates);
  await allHandled(suite.db.pool, updates.length, 60_000);
  expect(await sessionValue(suite.db.pool, '77')).toEqual({ n: updates.length });
  // each handled attempt's reply committed with it: n 1 … n 24, each once
  const replies = await suite.db.pool.query<{ text: string }>(`select text from relay.outbound`);
  expect(replies.rows.map((r) => Number(r.text.slice(2))).sort((a, b) => a - b)).toEqual(updates.map((_, i) => i + 1));
});

it('a WizardScene runs on dispatch.session() across updates dispatched by two engines', async () => {
  const register: RegisterHandlers = (bot, dispatch) => {
    type Ctx = Scenes.WizardContext;
    const text = (ctx: Ctx) => (ctx.message as { text?: string } | undefined)?.text ?? '';
    const wizard = new Scenes.WizardScene<Ctx>(
      'signup',
      async (ctx) => {
        await ctx.reply('name?');
        return ctx.wizard.next();
      },
      async (ctx) => {
        (ctx.wizard.state as { name?: string }).name = text(ctx);
        await ctx.reply('age?');
        return ctx.wizard.next();
      },
      async (ctx) => {
        const name = (ctx.wizard.state as { name: string }).name;
        (ctx.session as unknown as { profile: unknown }).profile = { name, age: Number(text(ctx)) };
        await ctx.reply(`saved ${name}`);
        return ctx.scene.leave();
      },
    );
    const b = bot as unknown as import('telegraf').Telegraf<Ctx>;
    b.use(dispatch.session() as unknown as import('telegraf').MiddlewareFn<Ctx>);
    b.use(new Scenes.Stage<Ctx>([wizard]).middleware());
    b.command('signup', (ctx) => ctx.scene.enter('signup'));
  };
  await start(register);
  await start(register);
  const cmd = { entities: [{ type: 'bot_command', offset: 0, length: 7 }] };
  const signup = messageFrom(1, 5160, 5160, '/signup');
  Object.assign(signup.message, cmd);
  await storeUpdates(suite.db.pool, createBoss(suite.db.url, { max: 1 }), [
    signup,
    messageFrom(2, 5160, 5160, 'Ada'),
    messageFrom(3, 5160, 5160, '36'),
  ]);
  await allHandled(suite.db.pool, 3, 60_000);
  const s = (await sessionValue(suite.db.pool, '5160:5160')) as { profile?: unknown; __scenes?: object };
  expect(s.profile).toEqual({ name: 'Ada', age: 36 });
  expect(s.__scenes ?? {}).not.toHaveProperty('current');
  const replies = await suite.db.pool.query(`select text from relay.outbound order by id`);
  expect(replies.rows.map((r) => r.text)).toEqual(['name?', 'age?', 'saved Ada']);
});
