/**
 * telegraf's own `session({ store: dispatch.sessionStore() })` under concurrent workers. telegraf
 * hands every update of one key that runs at the same time in a process the same in-memory object
 * (its cache) and writes it in `finally`, even after a failed handler. With a per-user key written
 * from several chats by two engines of several slots each, the counter must still equal the number
 * of handled updates, and each committed reply must show the count its attempt committed.
 */
import { session } from 'telegraf';
import { createBoss } from '../../../libs/db';
import type { DispatchContext, RegisterHandlers } from '../../../libs/dispatch';
import { waitFor } from '../../support/wait-for';
import { inboxRows, storeUpdates } from './helpers';
import { messageFrom, sessionSuite, sessionValue } from './session-helpers';

const suite = sessionSuite('dsp_sess_tgc', { defaults: { replyMode: 'outbound', config: { concurrency: 4 } } });

type Counter = { count: number };
type Ctx = DispatchContext & { session: Counter | undefined };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** How a handler uses the shared session object. */
type Style = 'mutate' | 'reassign';

function counterBot(style: Style, failFirst: Set<number>): RegisterHandlers {
  const failed = new Set<number>();
  return (bot, dispatch) => {
    bot.use(
      session({
        store: dispatch.sessionStore<Counter>(),
        defaultSession: () => ({ count: 0 }), // telegraf's own default: an object the store never handed out
        getSessionKey: (ctx) => Promise.resolve(ctx.from ? `user:${ctx.from.id}` : undefined),
      }),
    );
    bot.on('message', async (ctx) => {
      const c = ctx as unknown as Ctx;
      await sleep(5 + Math.random() * 25); // attempts of the key overlap in each engine
      if (style === 'mutate') c.session!.count++;
      else c.session = { count: (c.session?.count ?? 0) + 1 };
      await sleep(Math.random() * 25);
      const id = ctx.update.update_id;
      if (failFirst.has(id) && !failed.has(id)) {
        failed.add(id);
        throw new Error('fails after changing its session (telegraf still writes it in finally)');
      }
      await ctx.reply(`count ${c.session!.count}`);
    });
  };
}

async function run(style: Style, failFirst: number[]) {
  // one bot per engine, as one BOT_HANDLERS module per worker process: each has its own telegraf cache
  await suite.start(counterBot(style, new Set(failFirst)));
  await suite.start(counterBot(style, new Set(failFirst)));
  const chats = [-1, -2, -3, -4, -5, -6].map((c) => c - 7700);
  const updates = Array.from({ length: 30 }, (_, i) => messageFrom(i + 1, chats[i % chats.length], 78));
  await storeUpdates(suite.db.pool, createBoss(suite.db.url, { max: 1 }), updates);
  await waitFor(async () => (await inboxRows(suite.db.pool)).every((r) => r.state !== 'pending'), {
    what: 'every update settled',
    timeoutMs: 90_000,
  });
  const handled = (await inboxRows(suite.db.pool)).filter((r) => r.state === 'handled').length;
  expect(handled).toBe(updates.length);
  expect(await sessionValue(suite.db.pool, 'user:78')).toEqual({ count: handled });
  // a committed reply shows the count its attempt committed: 1 … 30, each once
  const replies = await suite.db.pool.query<{ text: string }>(`select text from relay.outbound`);
  expect(replies.rows.map((r) => Number(r.text.slice(6))).sort((a, b) => a - b)).toEqual(updates.map((_, i) => i + 1));
}

it('a per-user counter mutated in place from 6 chats under two engines of 4 slots: exact', async () => {
  await run('mutate', []);
});

it('the same with some first attempts failing after their increment: exact, the failed writes never land', async () => {
  await run('mutate', [3, 7, 12, 20, 26]);
});

it('a per-user counter reassigned (ctx.session = {...}) from 6 chats under two engines of 4 slots: exact', async () => {
  await run('reassign', [3, 9, 16, 22]);
});
