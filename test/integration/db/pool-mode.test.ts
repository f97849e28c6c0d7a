/**
 * DB_POOL_MODE against a real PgBouncer (test/support/pgbouncer.ts) in both of its pool modes: the
 * probe that tells a transaction pooler from a session-level connection, the start-up check built
 * on it, and what a transaction-mode pool does so that it works there (no startup parameters,
 * unnamed statements, limits per transaction, advisory locks held in a transaction).
 */
import {
  assertSessionLevel,
  createPool,
  Pool,
  PoolModeError,
  probePooling,
  withTransaction,
  withTryAdvisoryLock,
} from '../../../libs/db';
import { createTestDatabase } from '../../support/db';
import { PgBouncer, startPgBouncer } from '../../support/pgbouncer';

let db: Awaited<ReturnType<typeof createTestDatabase>>;
let txBouncer: PgBouncer;
let sessionBouncer: PgBouncer;
const pools: Pool[] = [];

beforeAll(async () => {
  db = await createTestDatabase('poolmode');
  txBouncer = await startPgBouncer('transaction');
  sessionBouncer = await startPgBouncer('session');
});
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.end().catch(() => undefined)));
});
afterAll(async () => {
  await txBouncer?.stop();
  await sessionBouncer?.stop();
  await db?.drop();
});

const track = (p: Pool): Pool => (pools.push(p), p);

describe('probePooling', () => {
  it('says transaction behind PgBouncer in transaction pooling, session behind PgBouncer in session pooling and directly', async () => {
    expect(await probePooling(txBouncer.urlFor(db.url))).toBe('transaction');
    expect(await probePooling(sessionBouncer.urlFor(db.url))).toBe('session');
    expect(await probePooling(db.url)).toBe('session');
  });
});

describe('assertSessionLevel (the start-up check of DB_POOL_MODE=session)', () => {
  it('passes a direct connection', async () => {
    await expect(assertSessionLevel(db.url, { variable: 'DATABASE_URL' })).resolves.toBeUndefined();
  });

  it('refuses a transaction pooler with RELAY_DB_POOL_MODE, exit 78, naming DB_POOL_MODE', async () => {
    const err = await assertSessionLevel(txBouncer.urlFor(db.url), { variable: 'DATABASE_URL' }).catch((e) => e);
    expect(err).toBeInstanceOf(PoolModeError);
    expect(err).toMatchObject({ code: 'RELAY_DB_POOL_MODE', exitCode: 78 });
    expect(err.message).toMatch(/transaction-pooling proxy/);
    expect(err.message).toMatch(/DB_POOL_MODE=transaction/);
  });

  it('refuses a session pooler that rejects the session limits as startup parameters, naming DB_POOL_MODE', async () => {
    const err = await assertSessionLevel(sessionBouncer.urlFor(db.url), { variable: 'DATABASE_URL' }).catch((e) => e);
    expect(err).toBeInstanceOf(PoolModeError);
    expect(err.message).toMatch(/unsupported startup parameter/);
    expect(err.message).toMatch(/DB_POOL_MODE=transaction/);
  });

  it('does not judge a database it cannot reach (the caller waits or fails as before)', async () => {
    const unreachable = txBouncer.urlFor(db.url).replace(`:${txBouncer.port}/`, ':1/');
    await expect(assertSessionLevel(unreachable, { variable: 'DATABASE_URL' })).resolves.toBeUndefined();
  });
});

describe('a pool with poolMode transaction behind PgBouncer in transaction pooling', () => {
  it('connects (a session-mode pool is refused: unsupported startup parameter)', async () => {
    const url = txBouncer.urlFor(db.url);
    const session = track(createPool(url, { max: 2 }));
    await expect(session.query('select 1')).rejects.toMatchObject({ code: '08P01' });
    const tx = track(createPool(url, { max: 2, poolMode: 'transaction' }));
    expect((await tx.query<{ one: number }>('select 1 as one')).rows).toEqual([{ one: 1 }]);
  });

  it('runs a named statement again and again, from clients whose server sessions change', async () => {
    const pool = track(createPool(txBouncer.urlFor(db.url), { max: 2, poolMode: 'transaction' }));
    const named = (n: number) => ({ name: 'relay_probe_named', text: 'select $1::int + 1 as n', values: [n] });
    const a = await pool.connect();
    const b = await pool.connect();
    try {
      const got: number[] = [];
      for (let i = 0; i < 3; i++) {
        got.push((await a.query<{ n: number }>(named(i))).rows[0].n);
        // b takes the server session a just used (PgBouncer reuses the latest): a's next statement runs on another
        await b.query('begin');
        got.push((await a.query<{ n: number }>(named(i))).rows[0].n);
        got.push((await b.query<{ n: number }>(named(i))).rows[0].n);
        await b.query('rollback');
      }
      expect(got).toEqual([1, 1, 1, 2, 2, 2, 3, 3, 3]);
    } finally {
      a.release();
      b.release();
    }
  });

  it('sets the session limits in each transaction it opens (SET LOCAL), not on the server session', async () => {
    const pool = track(
      createPool(txBouncer.urlFor(db.url), {
        max: 1,
        poolMode: 'transaction',
        timeouts: { statementMs: 4_000, lockMs: 3_000, idleInTransactionMs: 5_000 },
      }),
    );
    const inside = await withTransaction(pool, async (c) => {
      const { rows } = await c.query<{ s: string; l: string; i: string }>(
        `select current_setting('statement_timeout') as s, current_setting('lock_timeout') as l,
                current_setting('idle_in_transaction_session_timeout') as i`,
      );
      return rows[0];
    });
    expect(inside).toEqual({ s: '4s', l: '3s', i: '5s' });
    // outside a transaction: the server's (the role's) settings, nothing left behind by us
    const { rows } = await pool.query<{ s: string }>(`select current_setting('statement_timeout') as s`);
    expect(rows[0].s).toBe('0');
  });

  it('holds an advisory lock for the whole of fn: a second taker is turned away until it ends', async () => {
    const url = txBouncer.urlFor(db.url);
    const a = track(createPool(url, { max: 3, poolMode: 'transaction', timeouts: { idleInTransactionMs: 1_500 } }));
    const b = track(createPool(url, { max: 3, poolMode: 'transaction' }));
    const KEY = 7_346_299_001;
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const inside = new Promise<void>((r) => (entered = r));
    const first = withTryAdvisoryLock(a, KEY, async () => {
      entered();
      await held;
      return 'first';
    });
    await inside;
    // longer than idle_in_transaction_session_timeout: the lock transaction must stay alive meanwhile
    await new Promise((r) => setTimeout(r, 2_500));
    expect(await withTryAdvisoryLock(b, KEY, () => Promise.resolve('second'))).toBeNull();
    // other statements through the pooler are not stuck behind it
    expect((await b.query<{ one: number }>('select 1 as one')).rows[0].one).toBe(1);
    release();
    expect(await first).toBe('first');
    expect(await withTryAdvisoryLock(b, KEY, () => Promise.resolve('second'))).toBe('second');
  });
});
