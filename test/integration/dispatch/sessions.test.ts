/**
 * Transactional sessions (`dispatch.sessionStore()` under telegraf's own `session()`): real
 * PostgreSQL, real telegraf, the fake Bot API. Writes commit with the handled mark, vanish with a
 * failed attempt, and two attempts writing one key never lose an update.
 */
import { session } from 'telegraf';
import { createBoss } from '../../../libs/db';
import type { DispatchContext, DispatchSessionStore, RegisterHandlers } from '../../../libs/dispatch';
import { sessionStore } from '../../../libs/dispatch';
import { waitFor } from '../../support/wait-for';
import { attemptsOf, BOT_ID, inboxRows, makeUpdate, storeUpdates } from './helpers';
import { allHandled, barrier, messageFrom, sessionSuite, sessionValue } from './session-helpers';

const suite = sessionSuite('dsp_sess');

type Counter = { count: number };
type Ctx = DispatchContext & { session: Counter };

const start = suite.start;
const boss = () => createBoss(suite.db.url, { max: 1 });

const counterBot =
  (opts: { key?: (ctx: DispatchContext) => string | undefined; before?: (ctx: Ctx) => Promise<void> } = {}) =>
  (bot: Parameters<RegisterHandlers>[0], dispatch: Parameters<RegisterHandlers>[1]) => {
    bot.use(
      session({
        store: dispatch.sessionStore<Counter>(),
        defaultSession: () => ({ count: 0 }),
        ...(opts.key ? { getSessionKey: (ctx: DispatchContext) => Promise.resolve(opts.key!(ctx)) } : {}),
      }),
    );
    bot.on('message', async (ctx) => {
      const c = ctx as unknown as Ctx;
      c.session.count++;
      await opts.before?.(c);
      await ctx.reply(`count ${c.session.count}`);
    });
  };

describe('transactional sessions', () => {
  it("a counter session across two worker engines: each chat's count is exact", async () => {
    const register = counterBot();
    await start(register);
    await start(register);
    const chats = [9101, 9102, 9103, 9104];
    const perChat = 8;
    const updates = Array.from({ length: chats.length * perChat }, (_, i) =>
      makeUpdate(i + 1, chats[i % chats.length]),
    );
    await storeUpdates(suite.db.pool, boss(), updates);
    await allHandled(suite.db.pool, updates.length);
    for (const chat of chats) expect(await sessionValue(suite.db.pool, `${chat}:${chat}`)).toEqual({ count: perChat });
    const versions = await suite.db.pool.query(`select version::int as v from relay.sessions order by key`);
    expect(versions.rows.map((r) => r.v)).toEqual(chats.map(() => perChat));
  });

  it("a failed attempt's session writes are discarded; its retry starts from the committed session", async () => {
    let runs = 0;
    const seen: number[] = [];
    await start(
      counterBot({
        before: (ctx) => {
          seen.push(ctx.session.count);
          if (++runs === 1) return Promise.reject(new Error('first attempt fails after writing its session'));
          return Promise.resolve();
        },
      }),
    );
    await storeUpdates(suite.db.pool, boss(), [makeUpdate(1, 9201)]);
    await allHandled(suite.db.pool, 1);
    expect(seen).toEqual([1, 1]); // the retry saw count 0 + its own increment, not the failed attempt's
    expect(await sessionValue(suite.db.pool, '9201:9201')).toEqual({ count: 1 });
    const [row] = await inboxRows(suite.db.pool);
    expect((await attemptsOf(suite.db.pool, row.id)).map((a) => a.outcome)).toEqual(['retry', 'handled']);
  });

  it('a per-user key written from two chats at once: one attempt conflicts, runs again (uncounted), both increments land and only its second reply is queued', async () => {
    const bothRead = barrier(2);
    let first = true;
    const register = counterBot({
      key: (ctx) => (ctx.from ? `user:${ctx.from.id}` : undefined),
      // the first two attempts both read the session before either commits
      before: async () => {
        if (first) await bothRead();
      },
    });
    // two engines of one slot each (two telegraf session caches): the attempts meet only in the database
    await start(register, { replyMode: 'outbound', config: { concurrency: 1 } });
    await start(register, { replyMode: 'outbound', config: { concurrency: 1 } });
    await storeUpdates(suite.db.pool, boss(), [messageFrom(1, -9301, 42), messageFrom(2, -9302, 42)]);
    await waitFor(
      async () =>
        (await suite.db.pool.query(`select 1 from relay.attempts where error_code = 'RELAY_SESSION_CONFLICT'`))
          .rowCount! > 0,
      {
        what: 'a conflict',
      },
    );
    first = false;
    await allHandled(suite.db.pool, 2);
    expect(await sessionValue(suite.db.pool, 'user:42')).toEqual({ count: 2 });
    const conflict = await suite.db.pool.query(
      `select outcome, details from relay.attempts where error_code = 'RELAY_SESSION_CONFLICT'`,
    );
    expect(conflict.rows).toEqual([{ outcome: 'retry', details: expect.objectContaining({ uncounted: true }) }]);
    const rows = await inboxRows(suite.db.pool);
    expect(rows.map((r) => [r.state, r.attempts])).toEqual([
      ['handled', 1],
      ['handled', 1],
    ]);
    // the conflicting attempt's reply ("count 1") rolled back with it: the replies say 1 and 2
    const replies = await suite.db.pool.query(`select text from relay.outbound order by text`);
    expect(replies.rows.map((r) => r.text)).toEqual(['count 1', 'count 2']);
  });

  it('two updates of one per-user key in one engine (telegraf shares its cached object): both run again as needed and the count is exact', async () => {
    const gate = barrier(2, 500);
    await start(
      counterBot({
        key: (ctx) => (ctx.from ? `user:${ctx.from.id}` : undefined),
        before: () => gate(),
      }),
    );
    // an existing session, so telegraf's cache hands the second update the first one's object
    await sessionStore({ pool: suite.db.pool, botId: BOT_ID }).set('user:43', { count: 10 });
    await storeUpdates(suite.db.pool, boss(), [
      messageFrom(1, -9401, 43),
      messageFrom(2, -9402, 43),
      messageFrom(3, -9403, 43),
    ]);
    await allHandled(suite.db.pool, 3);
    expect(await sessionValue(suite.db.pool, 'user:43')).toEqual({ count: 13 });
  });

  it("a fresh per-user session written by three chats at once in one engine, with the store's defaultSession: the count is exact", async () => {
    const gate = barrier(3, 500);
    await start((bot, dispatch) => {
      bot.use(
        session({
          store: dispatch.sessionStore<Counter>({ defaultSession: () => ({ count: 0 }) }),
          getSessionKey: (ctx) => Promise.resolve(ctx.from ? `user:${ctx.from.id}` : undefined),
        }),
      );
      bot.on('message', async (ctx) => {
        (ctx as unknown as Ctx).session.count++;
        await gate();
      });
    });
    await storeUpdates(suite.db.pool, boss(), [
      messageFrom(1, -9451, 44),
      messageFrom(2, -9452, 44),
      messageFrom(3, -9453, 44),
    ]);
    await allHandled(suite.db.pool, 3);
    expect(await sessionValue(suite.db.pool, 'user:44')).toEqual({ count: 3 });
  });

  it('a session value that is not JSON fails its attempt with an error naming the key, never the value', async () => {
    await start((bot, dispatch) => {
      bot.use(session({ store: dispatch.sessionStore<object>(), defaultSession: () => ({}) }));
      bot.on('message', (ctx) => {
        const s = (ctx as unknown as { session: Record<string, unknown> }).session;
        const text = (ctx.message as { text: string }).text;
        if (text === 'fn') s.callback = () => 'secret-value';
        if (text === 'cycle') s.self = s;
        if (text === 'big') s.n = 10n;
        if (text === 'ok') s.ok = true;
      });
    });
    await storeUpdates(suite.db.pool, boss(), [
      makeUpdate(1, 9501, 'fn'),
      makeUpdate(2, 9502, 'cycle'),
      makeUpdate(3, 9503, 'big'),
      makeUpdate(4, 9504, 'ok'),
    ]);
    await waitFor(async () => (await inboxRows(suite.db.pool)).every((r) => r.state !== 'pending'), {
      what: 'all settled',
    });
    const rows = await inboxRows(suite.db.pool);
    // deterministic: failed at once, not retried
    expect(rows.map((r) => [r.state, r.attempts])).toEqual([
      ['failed', 1],
      ['failed', 1],
      ['failed', 1],
      ['handled', 1],
    ]);
    const errors = await suite.db.pool.query(
      `select error from relay.attempts where error_code = 'RELAY_SESSION_VALUE_INVALID' order by subject_key::bigint`,
    );
    expect(errors.rows.map((r) => r.error)).toEqual([
      expect.stringMatching(/session "9501:9501" cannot be stored: its field "callback" is a function/),
      expect.stringMatching(/session "9502:9502" cannot be stored: its value has a cycle/),
      expect.stringMatching(/session "9503:9503" cannot be stored: its field "n" is a BigInt/),
    ]);
    expect(JSON.stringify(errors.rows)).not.toContain('secret-value');
    expect(await sessionValue(suite.db.pool, '9504:9504')).toEqual({ ok: true });
    expect(await sessionValue(suite.db.pool, '9501:9501')).toBeUndefined();
  });

  it('outside a dispatch the store reads and writes the table at once; inside one it sees the committed value', async () => {
    const direct: DispatchSessionStore<Counter> = sessionStore<Counter>({ pool: suite.db.pool, botId: BOT_ID });
    await direct.set('9601:9601', { count: 5 });
    expect(await direct.get('9601:9601')).toEqual({ count: 5 });
    await start(counterBot());
    await storeUpdates(suite.db.pool, boss(), [makeUpdate(1, 9601)]);
    await allHandled(suite.db.pool, 1);
    expect(await direct.get('9601:9601')).toEqual({ count: 6 });
    await direct.delete('9601:9601');
    expect(await direct.get('9601:9601')).toBeUndefined();
    await expect(sessionStore().get('x')).rejects.toMatchObject({ code: 'RELAY_DISPATCH_NO_DATABASE' });
  });

  it('an expired session reads as absent: the next update starts from the default', async () => {
    await start(counterBot());
    await sessionStore({ pool: suite.db.pool, botId: BOT_ID }).set('9701:9701', { count: 50 });
    await suite.db.pool.query(`update relay.sessions set expires_at = now() - interval '1 second'`);
    await storeUpdates(suite.db.pool, boss(), [makeUpdate(1, 9701)]);
    await allHandled(suite.db.pool, 1);
    expect(await sessionValue(suite.db.pool, '9701:9701')).toEqual({ count: 1 });
    const ttl = await suite.db.pool.query(
      `select extract(epoch from expires_at - updated_at)::int as s from relay.sessions where key = '9701:9701'`,
    );
    expect(ttl.rows[0].s).toBe(30 * 86_400);
  });
});
