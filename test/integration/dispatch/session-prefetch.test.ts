/**
 * The dispatch claim reads each update's session under telegraf's default key, so `session()` does
 * not query it again: real PostgreSQL, real telegraf, the fake Bot API. What is counted is the
 * session read statement on the worker's own pool; what must hold is that a read from the claim is
 * still only a snapshot, whose version a write has to match at commit.
 */
import { session } from 'telegraf';
import { createBoss } from '../../../libs/db';
import type { DispatchContext, RegisterHandlers } from '../../../libs/dispatch';
import { attemptsOf, BOT_ID, inboxRows, makeUpdate, storeUpdates } from './helpers';
import { allHandled, sessionSuite, sessionValue } from './session-helpers';

const suite = sessionSuite('dsp_sess_pre');
let sessionReads = 0;

type Counter = { count: number };
type Ctx = DispatchContext & { session: Counter };

const SESSION_READ = /^select value, version::text, expires_at > now\(\) as live from relay\.sessions/;

beforeAll(() => {
  const query = suite.db.pool.query.bind(suite.db.pool) as (...args: unknown[]) => unknown;
  (suite.db.pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    if (typeof args[0] === 'string' && SESSION_READ.test(args[0])) sessionReads++;
    return query(...args);
  };
});
beforeEach(() => {
  sessionReads = 0;
});

const start = suite.start;
const seed = (key: string, value: unknown, version: number, expired = false) =>
  suite.db.pool.query(
    `insert into relay.sessions (bot_id, key, value, version, expires_at)
     values ($1, $2, $3::jsonb, $4, now() + ($5 || ' days')::interval)`,
    [BOT_ID, key, JSON.stringify(value), version, expired ? '-1' : '1'],
  );

/** A counter under `session()`; `before` runs ahead of the session middleware. */
const counterBot =
  (opts: { key?: (ctx: DispatchContext) => string; before?: (ctx: DispatchContext) => Promise<void> } = {}) =>
  (bot: Parameters<RegisterHandlers>[0], dispatch: Parameters<RegisterHandlers>[1]) => {
    if (opts.before) bot.use(async (ctx, next) => (await opts.before!(ctx), next()));
    bot.use(
      session({
        store: dispatch.sessionStore<Counter>(),
        defaultSession: () => ({ count: 0 }),
        ...(opts.key ? { getSessionKey: (ctx: DispatchContext) => Promise.resolve(opts.key!(ctx)) } : {}),
      }),
    );
    bot.on('message', async (ctx) => {
      const counter = (ctx as unknown as Ctx).session as Counter | undefined; // none without a key
      if (counter) counter.count++;
      await ctx.reply('ok');
    });
  };

describe('the session read by the dispatch claim', () => {
  it('telegraf’s default key is read by the claim: no session query, counts exact, an expired session starts over', async () => {
    await seed('9201:9201', { count: 50 }, 3, true);
    await seed('9202:9202', { count: 7 }, 2);
    await start(counterBot());
    const updates = Array.from({ length: 8 }, (_, i) => makeUpdate(i + 1, 9201 + (i % 2)));
    await storeUpdates(suite.db.pool, createBoss(suite.db.url, { max: 1 }), updates);
    await allHandled(suite.db.pool, updates.length);
    expect(await sessionValue(suite.db.pool, '9201:9201')).toEqual({ count: 4 });
    expect(await sessionValue(suite.db.pool, '9202:9202')).toEqual({ count: 11 });
    const { rows } = await suite.db.pool.query(`select key, version::int as v from relay.sessions order by key`);
    expect(rows).toEqual([
      { key: '9201:9201', v: 7 },
      { key: '9202:9202', v: 6 },
    ]);
    expect(sessionReads).toBe(0);
  });

  it('a key of the bot’s own is read as before', async () => {
    await start(counterBot({ key: (ctx) => `chat:${ctx.chat!.id}` }));
    const updates = Array.from({ length: 4 }, (_, i) => makeUpdate(i + 1, 9301));
    await storeUpdates(suite.db.pool, createBoss(suite.db.url, { max: 1 }), updates);
    await allHandled(suite.db.pool, updates.length);
    expect(await sessionValue(suite.db.pool, 'chat:9301')).toEqual({ count: 4 });
    expect(sessionReads).toBeGreaterThanOrEqual(updates.length);
  });

  it('a session written after the claim read it: the attempt conflicts and runs again, no update lost', async () => {
    await seed('9401:9401', { count: 5 }, 1);
    let bumped = false;
    await start(
      counterBot({
        before: async () => {
          if (bumped) return;
          bumped = true; // between the claim's read and the handler: another writer moves the session on
          await suite.db.pool.query(
            `update relay.sessions set value = '{"count": 100}', version = version + 1 where key = '9401:9401'`,
          );
        },
      }),
    );
    await storeUpdates(suite.db.pool, createBoss(suite.db.url, { max: 1 }), [makeUpdate(1, 9401)]);
    await allHandled(suite.db.pool, 1);
    expect(await sessionValue(suite.db.pool, '9401:9401')).toEqual({ count: 101 });
    const [row] = await inboxRows(suite.db.pool);
    const attempts = await attemptsOf(suite.db.pool, row.id);
    expect(attempts.length).toBe(2);
    expect(attempts[0].error_code).toBe('RELAY_SESSION_CONFLICT');
  });

  it('senders of any shape neither break the claim nor share a session: each is read as telegraf keys it', async () => {
    await start(counterBot());
    const senders: unknown[] = [
      { id: { x: 1 } },
      { id: "1'; drop table relay.sessions; --" },
      [1],
      null,
      { id: 1e300 },
    ];
    const updates = senders.map((from, i) => {
      const u = makeUpdate(i + 1, 9501 + i) as { update_id: number; message: Record<string, unknown> };
      u.message.from = from;
      return u;
    });
    await storeUpdates(suite.db.pool, createBoss(suite.db.url, { max: 1 }), updates);
    await allHandled(suite.db.pool, updates.length);
    const { rows } = await suite.db.pool.query<{ key: string; value: unknown }>(
      `select key, value from relay.sessions order by key collate "C"`,
    );
    // the ones telegraf gives a key (an id it can print) each have their own counter; the others have none
    expect(rows).toEqual(
      ["1'; drop table relay.sessions; --:9502", '1e+300:9505', '[object Object]:9501'].map((key) => ({
        key,
        value: { count: 1 },
      })),
    );
  });
});
