import type { Pool, PoolClient } from 'pg';

/**
 * Like libs/db `withTransaction`, but survives the database going away mid-transaction.
 * pg-pool removes its own 'error' listener from a client while it is checked out; a server that
 * terminates connections (restart: FATAL 57P01) between two of our statements then emits 'error'
 * with no listener, and Node kills the process. Here the client carries a listener for as long as
 * we hold it, and a broken client is destroyed instead of returned to the pool.
 */
export async function inTransaction<T>(pool: Pool, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  const onError = () => {
    broken = true;
  };
  client.on('error', onError);
  try {
    await client.query('begin');
    const result = await fn(client);
    await client.query('commit');
    return result;
  } catch (err) {
    if (!broken) {
      try {
        await client.query('rollback');
      } catch {
        broken = true;
      }
    }
    throw err;
  } finally {
    client.off('error', onError);
    client.release(broken ? true : undefined);
  }
}
