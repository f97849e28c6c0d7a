/**
 * The outcome transaction of many attempts writes their sessions together (commitSessions, one
 * statement for the batch): each write still lands only at the version its attempt read, a batch
 * with any write that cannot land writes nothing, and when the outcome writer then writes that
 * batch's attempts one by one (as it does for any failed batch), no increment is lost or doubled.
 */
import fc from 'fast-check';
import { withTransaction } from '../../../libs/db';
import { commitSessions } from '../../../libs/dispatch/attempt-sessions';
import { AttemptWork } from '../../../libs/dispatch/attempt-work';
import { dispatchStorage, type DispatchState } from '../../../libs/dispatch/context';
import { hasCode } from '../../../libs/errors';
import { createMigratedDatabase } from '../../support/db';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;

beforeAll(async () => {
  db = await createMigratedDatabase('dsp_sess_batch');
});
afterAll(async () => {
  await db?.drop();
});

type Counter = { count: number };

/** A fresh attempt that has read `key` and incremented it (in its own dispatch context). */
async function incremented(key: string): Promise<AttemptWork> {
  const work = new AttemptWork({ pool: db.pool, botId: 'b', sessionTtlMs: 60_000 });
  await dispatchStorage.run({ work } as unknown as DispatchState, async () => {
    const v = ((await work.sessions.get(key)) as Counter | undefined) ?? { count: 0 };
    await work.sessions.set(key, { count: v.count + 1 });
  });
  return work;
}

const commitAll = (works: AttemptWork[]) =>
  withTransaction(db.pool, (c) =>
    commitSessions(
      c,
      works.map((w) => w.sessions),
    ),
  );

async function sessions(): Promise<{ key: string; value: Counter; version: string }[]> {
  const { rows } = await db.pool.query<{ key: string; value: Counter; version: string }>(
    `select key, value, version::text from relay.sessions where bot_id = 'b' order by key`,
  );
  return rows;
}

beforeEach(async () => {
  await db.pool.query('truncate relay.sessions');
});

it('writes a batch of new and existing sessions in one transaction, each at its version', async () => {
  await commitAll([await incremented('x')]);
  await commitAll([await incremented('x'), await incremented('y'), await incremented('z')]);
  expect(await sessions()).toEqual([
    { key: 'x', value: { count: 2 }, version: '2' },
    { key: 'y', value: { count: 1 }, version: '1' },
    { key: 'z', value: { count: 1 }, version: '1' },
  ]);
});

it('a batch holding one stale write conflicts and writes nothing, its other attempts included', async () => {
  await commitAll([await incremented('x')]);
  const stale = await incremented('x');
  await commitAll([await incremented('x')]); // another writer lands first: x is at version 2
  const other = await incremented('y');
  await expect(commitAll([other, stale])).rejects.toMatchObject({ code: 'RELAY_SESSION_CONFLICT' });
  expect(await sessions()).toEqual([{ key: 'x', value: { count: 2 }, version: '2' }]);
  await commitAll([other]); // written alone, as the outcome writer does after a failed batch
  expect((await sessions()).map((s) => s.key)).toEqual(['x', 'y']);
});

it('two attempts of one batch writing the same key (a per-user key from two chats) conflict; alone, the first lands and the second is stale', async () => {
  const a = await incremented('u');
  const b = await incremented('u');
  await expect(commitAll([a, b])).rejects.toMatchObject({ code: 'RELAY_SESSION_CONFLICT' });
  expect(await sessions()).toEqual([]);
  await commitAll([a]);
  await expect(commitAll([b])).rejects.toMatchObject({ code: 'RELAY_SESSION_CONFLICT' });
  expect(await sessions()).toEqual([{ key: 'u', value: { count: 1 }, version: '1' }]);
});

it('property: attempts committed in batches, a failed batch written one by one and conflicts rerun, count every increment exactly once', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.constantFrom('a', 'b', 'c', 'd'), { minLength: 1, maxLength: 12 }),
      fc.array(fc.integer({ min: 1, max: 5 }), { minLength: 1, maxLength: 12 }),
      async (keys, batchSizes) => {
        await db.pool.query('truncate relay.sessions');
        // every attempt reads before any batch commits: the widest window for stale reads
        const ready: { key: string; work: AttemptWork }[] = [];
        for (const key of keys) ready.push({ key, work: await incremented(key) });
        let turn = 0;
        while (ready.length > 0) {
          const batch = ready.splice(0, batchSizes[turn++ % batchSizes.length]);
          const rerun: string[] = [];
          try {
            await commitAll(batch.map((b) => b.work));
          } catch (err) {
            if (!hasCode(err, 'RELAY_SESSION_CONFLICT')) throw err;
            for (const b of batch) {
              try {
                await commitAll([b.work]);
              } catch (e) {
                if (!hasCode(e, 'RELAY_SESSION_CONFLICT')) throw e;
                rerun.push(b.key);
              }
            }
          }
          // a conflicting attempt runs again with a fresh read, after the others
          for (const key of rerun) ready.push({ key, work: await incremented(key) });
        }
        const expected = [...new Set(keys)].sort().map((k) => {
          const n = keys.filter((x) => x === k).length;
          return { key: k, value: { count: n }, version: String(n) };
        });
        expect(await sessions()).toEqual(expected);
      },
    ),
    { numRuns: 50 },
  );
});
