/**
 * `dispatch.transaction(ctx)`: the handler's own SQL commits with its update's handled mark, its
 * replies and its session, or not at all (real PostgreSQL, real telegraf, the fake Bot API).
 */
import { session } from 'telegraf';
import { createBoss } from '../../../libs/db';
import { transaction, type DispatchClient, type RegisterHandlers } from '../../../libs/dispatch';
import { errorCode } from '../../../libs/errors';
import { waitFor } from '../../support/wait-for';
import { attemptsOf, inboxRows, makeUpdate, storeUpdates } from './helpers';
import { sessionSuite, sessionValue } from './session-helpers';

const suite = sessionSuite('dsp_tx', {
  setup: async (db) => {
    await db.pool.query(`create table handler_rows (update_id bigint not null, attempt int not null, note text)`);
  },
  truncate: ['handler_rows'],
});

const start = suite.start;
const boss = () => createBoss(suite.db.url, { max: 1 });
const rowsOf = async () =>
  (await suite.db.pool.query(`select update_id::int as u, attempt, note from handler_rows order by update_id, attempt`))
    .rows;
const openTransactions = async () =>
  Number(
    (
      await suite.db.pool.query(
        `select count(*) from pg_stat_activity where datname = current_database() and state like 'idle in transaction%'`,
      )
    ).rows[0].count,
  );

/** Counts each update's attempts in this process (the handler's own view). */
function attemptCounter() {
  const runs = new Map<number, number>();
  return (updateId: number) => {
    const n = (runs.get(updateId) ?? 0) + 1;
    runs.set(updateId, n);
    return n;
  };
}

describe('dispatch.transaction(ctx)', () => {
  it("the handler's rows, its reply, its session and the handled mark commit together", async () => {
    await start(
      (bot, dispatch) => {
        bot.use(session({ store: dispatch.sessionStore<{ n: number }>(), defaultSession: () => ({ n: 0 }) }));
        bot.on('message', async (ctx) => {
          const db1 = await dispatch.transaction(ctx);
          const db2 = await transaction(ctx); // the root export: the same transaction
          expect(db2).toBe(db1);
          await db1.query(`insert into handler_rows (update_id, attempt, note) values ($1, 1, 'mine')`, [
            ctx.update.update_id,
          ]);
          (ctx as unknown as { session: { n: number } }).session.n++;
          await ctx.reply('saved');
        });
      },
      { replyMode: 'outbound' },
    );
    await storeUpdates(suite.db.pool, boss(), [makeUpdate(1, 9801), makeUpdate(2, 9802)]);
    await waitFor(async () => (await inboxRows(suite.db.pool)).every((r) => r.state === 'handled'), {
      what: 'handled',
    });
    expect(await rowsOf()).toEqual([
      { u: 1, attempt: 1, note: 'mine' },
      { u: 2, attempt: 1, note: 'mine' },
    ]);
    expect((await suite.db.pool.query(`select count(*)::int as n from relay.outbound`)).rows[0].n).toBe(2);
    expect(await sessionValue(suite.db.pool, '9801:9801')).toEqual({ n: 1 });
    const [row] = await inboxRows(suite.db.pool);
    expect((await attemptsOf(suite.db.pool, row.id)).map((a) => a.outcome)).toEqual(['handled']);
    await waitFor(async () => (await openTransactions()) === 0, { what: 'the connections given back' });
  });

  it('its rows are not visible before the handled mark commits', async () => {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let inserted = false;
    await start((bot, dispatch) => {
      bot.on('message', async (ctx) => {
        const tx = await dispatch.transaction(ctx);
        await tx.query(`insert into handler_rows (update_id, attempt) values ($1, 1)`, [ctx.update.update_id]);
        inserted = true;
        await released;
      });
    });
    await storeUpdates(suite.db.pool, boss(), [makeUpdate(1, 9811)]);
    await waitFor(() => inserted, { what: 'the handler inserted' });
    expect(await rowsOf()).toEqual([]);
    expect((await inboxRows(suite.db.pool))[0].state).toBe('pending');
    release();
    await waitFor(async () => (await inboxRows(suite.db.pool))[0].state === 'handled', { what: 'handled' });
    expect(await rowsOf()).toEqual([{ u: 1, attempt: 1, note: null }]);
  });

  it('a handler that throws after writing leaves no row; its retry commits its own', async () => {
    const attempt = attemptCounter();
    await start((bot, dispatch) => {
      bot.on('message', async (ctx) => {
        const n = attempt(ctx.update.update_id);
        const tx = await dispatch.transaction(ctx);
        await tx.query(`insert into handler_rows (update_id, attempt) values ($1, $2)`, [ctx.update.update_id, n]);
        if (n === 1) throw new Error('fails after its insert');
      });
    });
    await storeUpdates(suite.db.pool, boss(), [makeUpdate(1, 9821)]);
    await waitFor(async () => (await inboxRows(suite.db.pool))[0].state === 'handled', { what: 'handled' });
    expect(await rowsOf()).toEqual([{ u: 1, attempt: 2, note: null }]);
    const [row] = await inboxRows(suite.db.pool);
    expect((await attemptsOf(suite.db.pool, row.id)).map((a) => a.outcome)).toEqual(['retry', 'handled']);
    await waitFor(async () => (await openTransactions()) === 0, { what: 'the rolled-back connection given back' });
  });

  it('a handler that times out leaves no row, and its client refuses queries once the attempt is over', async () => {
    const attempt = attemptCounter();
    const late: unknown[] = [];
    await start(
      (bot, dispatch) => {
        bot.on('message', async (ctx) => {
          const n = attempt(ctx.update.update_id);
          const tx = await dispatch.transaction(ctx);
          await tx.query(`insert into handler_rows (update_id, attempt) values ($1, $2)`, [ctx.update.update_id, n]);
          if (n > 1) return;
          await new Promise((r) => setTimeout(r, 600)); // past HANDLER_TIMEOUT
          await tx
            .query(`insert into handler_rows (update_id, attempt, note) values ($1, $2, 'late')`, [
              ctx.update.update_id,
              n,
            ])
            .catch((err: unknown) => late.push(errorCode(err)));
        });
      },
      { handlerTimeoutMs: 200 },
    );
    await storeUpdates(suite.db.pool, boss(), [makeUpdate(1, 9831)]);
    await waitFor(async () => (await inboxRows(suite.db.pool))[0].state === 'handled', { what: 'handled' });
    await waitFor(() => late.length === 1, { what: 'the late query' });
    expect(late).toEqual(['RELAY_DISPATCH_CLOSED']);
    expect(await rowsOf()).toEqual([{ u: 1, attempt: 2, note: null }]);
    const [row] = await inboxRows(suite.db.pool);
    const audit = await attemptsOf(suite.db.pool, row.id);
    expect(audit.map((a) => [a.outcome, a.details?.timedOut ?? null])).toEqual([
      ['retry', true],
      ['handled', null],
    ]);
  });

  it('a session conflict on the transaction rolls the handler rows back too and runs the attempt again', async () => {
    const attempt = attemptCounter();
    let arrived = 0;
    let open!: () => void;
    const bothRead = new Promise<void>((r) => (open = r));
    const register = ((bot, dispatch) => {
      bot.use(
        session({
          store: dispatch.sessionStore<{ n: number }>(),
          defaultSession: () => ({ n: 0 }),
          getSessionKey: (ctx) => Promise.resolve(ctx.from ? `user:${ctx.from.id}` : undefined),
        }),
      );
      bot.on('message', async (ctx) => {
        const n = attempt(ctx.update.update_id);
        const tx: DispatchClient = await dispatch.transaction(ctx);
        await tx.query(`insert into handler_rows (update_id, attempt) values ($1, $2)`, [ctx.update.update_id, n]);
        (ctx as unknown as { session: { n: number } }).session.n++;
        if (++arrived === 2) open();
        if (n === 1) await Promise.race([bothRead, new Promise((r) => setTimeout(r, 3_000))]);
      });
    }) as RegisterHandlers;
    await start(register, { config: { concurrency: 1 } });
    await start(register, { config: { concurrency: 1 } });
    const from = (u: number, chat: number) => ({
      update_id: u,
      message: {
        message_id: u,
        date: 1,
        chat: { id: chat, type: 'group', title: 'G' },
        from: { id: 77, is_bot: false, first_name: 'U' },
        text: 'x',
      },
    });
    await storeUpdates(suite.db.pool, boss(), [from(1, -9841), from(2, -9842)]);
    await waitFor(async () => (await inboxRows(suite.db.pool)).every((r) => r.state === 'handled'), {
      what: 'handled',
    });
    expect(await sessionValue(suite.db.pool, 'user:77')).toEqual({ n: 2 });
    const conflicts = await suite.db.pool.query(
      `select subject_key::int as u from relay.attempts where error_code = 'RELAY_SESSION_CONFLICT'`,
    );
    expect(conflicts.rows).toHaveLength(1);
    const loser = conflicts.rows[0].u as number;
    // the loser's first attempt rolled back with its session write; only its rerun's row is there
    const rows = await rowsOf();
    expect(rows.filter((r) => r.u === loser).map((r) => r.attempt)).toEqual([2]);
    expect(rows.filter((r) => r.u !== loser).map((r) => r.attempt)).toEqual([1]);
  });

  it('a handler that swallows a failed query of its own (transaction aborted) is retried, counted, and its rows roll back', async () => {
    const attempt = attemptCounter();
    await start(
      (bot, dispatch) => {
        bot.on('message', async (ctx) => {
          const n = attempt(ctx.update.update_id);
          const tx = await dispatch.transaction(ctx);
          await tx.query(`insert into handler_rows (update_id, attempt) values ($1, $2)`, [ctx.update.update_id, n]);
          if (n === 1) await tx.query('select 1/0').catch(() => undefined); // swallowed: the transaction is aborted
        });
      },
      { replyMode: 'outbound' },
    );
    await storeUpdates(suite.db.pool, boss(), [makeUpdate(1, 9851)]);
    await waitFor(async () => (await inboxRows(suite.db.pool))[0].state === 'handled', { what: 'handled' });
    const [row] = await inboxRows(suite.db.pool);
    expect(row.attempts).toBe(2);
    const audit = await attemptsOf(suite.db.pool, row.id);
    expect(audit.map((a) => [a.outcome, a.error_code])).toEqual([
      ['retry', '25P02'],
      ['handled', null],
    ]);
    expect(await rowsOf()).toEqual([{ u: 1, attempt: 2, note: null }]);
  });

  it('outside a dispatch attempt there is no transaction to join', async () => {
    await expect(transaction({})).rejects.toMatchObject({ code: 'RELAY_DISPATCH_NO_ATTEMPT' });
  });
});
