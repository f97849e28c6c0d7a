/**
 * Work registered for the end of a transaction learns whether it committed: a COMMIT after a
 * failed statement answers ROLLBACK without an error, and counts as not committed.
 */
import { withTransaction } from '../../../libs/db';
import { onTransactionEnd } from '../../../libs/db/transaction-end';
import { createMigratedDatabase } from '../../support/db';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
beforeAll(async () => {
  db = await createMigratedDatabase('tx_end');
});
afterAll(async () => {
  await db.drop();
});

it('tells registered work that a transaction committed, or did not', async () => {
  const ends: boolean[] = [];
  await withTransaction(db.pool, async (c) => {
    onTransactionEnd(c, (committed) => ends.push(committed));
    await c.query('select 1');
  });
  await withTransaction(db.pool, async (c) => {
    onTransactionEnd(c, (committed) => ends.push(committed));
    await c.query('select 1/0').catch(() => undefined); // the transaction is aborted; COMMIT answers ROLLBACK
  });
  await expect(
    withTransaction(db.pool, async (c) => {
      onTransactionEnd(c, (committed) => ends.push(committed));
      await c.query('select 1');
      throw new Error('rolled back');
    }),
  ).rejects.toThrow('rolled back');
  expect(ends).toEqual([true, false, false]);
});
