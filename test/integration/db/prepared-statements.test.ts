/**
 * `prepared` statements (libs/db/query.ts) against the real server: parsed once per connection,
 * sent unnamed by a transaction-mode pool, and still answered after a migration changed the
 * columns under a prepared `select *` (PostgreSQL then refuses the old prepared statement with
 * "cached plan must not change result type" on every connection that holds it).
 */
import fc from 'fast-check';
import { Pool } from 'pg';
import { createPool, withTransaction } from '../../../libs/db';
import { prepared, query, statement } from '../../../libs/db/query';
import { createTestDatabase } from '../../support/db';

let db: Awaited<ReturnType<typeof createTestDatabase>>;
const pools: Pool[] = [];
const track = (p: Pool): Pool => (pools.push(p), p);

beforeAll(async () => {
  db = await createTestDatabase('prepared');
});
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.end().catch(() => undefined)));
});
afterAll(async () => {
  await db?.drop();
});

const preparedOn = async (client: { query: Pool['query'] }): Promise<{ name: string; statement: string }[]> =>
  (await client.query<{ name: string; statement: string }>('select name, statement from pg_prepared_statements')).rows;

describe('prepared', () => {
  it('names a text the same way every time, and two texts two ways', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (a, b) => {
        expect(prepared(a).name).toBe(prepared(a).name);
        expect(prepared(a).name).toMatch(/^tgr_[0-9a-f]{24}$/);
        if (a !== b) expect(prepared(a).name).not.toBe(prepared(b).name);
      }),
    );
    expect(statement('select 1').name).toBeUndefined();
  });

  it('is prepared once on a connection and answers every call with its own values', async () => {
    const pool = track(createPool(db.url, { max: 1 }));
    const plusOne = prepared<{ n: number }>('select $1::int + 1 as n');
    const got: number[] = [];
    for (let i = 0; i < 5; i++) got.push((await query(pool, plusOne, [i]))[0].n);
    expect(got).toEqual([1, 2, 3, 4, 5]);
    const client = await pool.connect();
    try {
      const held = await preparedOn(client);
      expect(held).toEqual([{ name: plusOne.name, statement: plusOne.text }]);
    } finally {
      client.release();
    }
  });

  it('is sent unnamed by a transaction-mode pool (no statement left on the server session)', async () => {
    const pool = track(createPool(db.url, { max: 1, poolMode: 'transaction' }));
    const plusTwo = prepared<{ n: number }>('select $1::int + 2 as n');
    expect((await query(pool, plusTwo, [1]))[0].n).toBe(3);
    expect(await preparedOn(pool)).toEqual([]);
  });

  it("is sent unnamed on a caller's own pool and client (they may sit behind a transaction pooler)", async () => {
    const own = track(new Pool({ connectionString: db.url, max: 1 }));
    const plusThree = prepared<{ n: number }>('select $1::int + 3 as n');
    expect((await query(own, plusThree, [1]))[0].n).toBe(4);
    const client = await own.connect();
    try {
      expect((await query(client, plusThree, [2]))[0].n).toBe(5);
      expect(await preparedOn(client)).toEqual([]);
    } finally {
      client.release();
    }
  });

  it('answers again after the columns changed under it: on the retry in a transaction, at once on a pool', async () => {
    const setup = track(createPool(db.url, { max: 1 }));
    await setup.query('create table prep_probe (id int primary key)');
    await setup.query('insert into prep_probe values (1)');
    const all = prepared<Record<string, unknown>>('select * from prep_probe order by id');
    const pool = track(createPool(db.url, { max: 1 }));
    const other = track(createPool(db.url, { max: 1 }));
    expect(await query(pool, all)).toEqual([{ id: 1 }]);
    expect(await query(other, all)).toEqual([{ id: 1 }]);

    // a migration while both connections hold the statement prepared
    await setup.query('alter table prep_probe add column label text');
    await setup.query(`update prep_probe set label = 'one'`);
    // in a transaction the refusal aborts it: that transaction fails, the next one works
    const inTx = () => withTransaction(other, (tx) => query(tx, all));
    await expect(inTx()).rejects.toMatchObject({ code: '0A000' });
    expect(await inTx()).toEqual([{ id: 1, label: 'one' }]);
    expect(await query(pool, all)).toEqual([{ id: 1, label: 'one' }]);

    // both hold the statement under its new name; another migration, and a pool answers at once
    await setup.query('alter table prep_probe add column n int');
    expect(await query(pool, all)).toEqual([{ id: 1, label: 'one', n: null }]);
    expect(await inTx()).toEqual([{ id: 1, label: 'one', n: null }]);
    const client = await pool.connect();
    try {
      expect((await preparedOn(client)).map((p) => p.name)).toContain(`${all.name}_2`);
    } finally {
      client.release();
    }
  });
});
