import { Pool, PoolClient, PoolConfig } from 'pg';

export type { Pool, PoolClient };

/** Anything that runs a parameterized query: a Pool or a client inside a transaction. */
export interface Queryable {
  query: Pool['query'];
}

/**
 * One pool per process role. `application_name` makes each component visible in pg_stat_activity,
 * which is how operators tell a stuck worker from a stuck poller.
 */
export function createPool(connectionString: string, opts: { max?: number; applicationName?: string } & PoolConfig = {}): Pool {
  const { applicationName, ...rest } = opts;
  const pool = new Pool({
    connectionString,
    max: opts.max ?? 10,
    application_name: applicationName ?? 'tg-relay',
    connectionTimeoutMillis: 10_000,
    ...rest,
  });
  // An idle client that loses its connection (database restart) emits 'error' on the pool; without a
  // listener that would crash the process. The next checkout reconnects.
  pool.on('error', () => undefined);
  // pg-pool removes its own listener while a client is checked out, so a connection killed in the
  // middle of a transaction would emit an unhandled 'error' and crash the process. The query in
  // flight still rejects; this listener only keeps the process alive.
  pool.on('connect', (client) => {
    client.on('error', () => undefined);
  });
  return pool;
}

/**
 * Runs `fn` in a transaction on a dedicated client; rolls back on any error and rethrows it.
 * Survives the database going away mid-transaction (restart: FATAL 57P01): the client carries an
 * 'error' listener while we hold it, and a broken client is destroyed instead of returned to the pool.
 */
export async function withTransaction<T>(pool: Pool, fn: (client: PoolClient) => Promise<T>): Promise<T> {
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
    if (!broken) await client.query('rollback').catch(() => (broken = true));
    throw err;
  } finally {
    client.off('error', onError);
    client.release(broken ? true : undefined);
  }
}

/** pg-boss's `{ db }` option: runs its SQL on our transaction's client. */
export function bossDb(client: PoolClient): { executeSql: (text: string, values?: unknown[]) => Promise<{ rows: any[] }> } {
  return { executeSql: (text, values) => client.query(text, values as unknown[]) };
}
