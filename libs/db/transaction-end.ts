/**
 * Work that may start only once a transaction has committed, and must be undone in memory when it
 * does not: jobs claimed inside an outcome transaction are run after its COMMIT, and the slots
 * they were given are freed after a ROLLBACK. Only the transactions this project opens and ends
 * itself run these (withTransaction, an attempt's own transaction): register nowhere else.
 */
import type { PoolClient } from 'pg';

const waiting = new WeakMap<PoolClient, ((committed: boolean) => void)[]>();

/** Calls `fn(true)` after the transaction open on `client` commits, `fn(false)` if it ends otherwise. */
export function onTransactionEnd(client: PoolClient, fn: (committed: boolean) => void): void {
  const fns = waiting.get(client);
  if (fns) fns.push(fn);
  else waiting.set(client, [fn]);
}

/** The transaction on `client` has ended: runs what waited for it, once. */
export function transactionEnded(client: PoolClient, committed: boolean): void {
  const fns = waiting.get(client);
  if (!fns) return;
  waiting.delete(client);
  for (const fn of fns) {
    try {
      fn(committed);
    } catch {
      // each is the registrant's own in-memory step; one failing must not skip the others
    }
  }
}

/**
 * COMMIT on `client`; true if it committed. A transaction in which a statement failed answers a
 * COMMIT with ROLLBACK, without an error.
 */
export async function commit(client: PoolClient): Promise<boolean> {
  const r = await client.query('commit');
  return r.command === 'COMMIT';
}
