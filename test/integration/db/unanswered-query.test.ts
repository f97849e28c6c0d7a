/**
 * A database connection whose path goes silent (a failover or a lost NAT entry: the socket stays
 * open, nothing answers, no FIN) must not hang the process: TCP keepalive cannot notice it while a
 * query is unanswered (the kernel retransmits for ~15 minutes first). Every pool of ours gives a
 * query DB_CLIENT_GRACE_MS beyond its statement_timeout, then drops that connection and opens a new
 * one. Here the silence is real: a TCP proxy stops passing bytes on the connections open so far.
 */
import {
  createPool,
  DB_CLIENT_GRACE_MS,
  isUnansweredQuery,
  Pool,
  sessionOptions,
  withTransaction,
} from '../../../libs/db';
import { createBoss } from '../../../libs/db';
import { createCollector, Collector } from '../../../libs/sandbox';
import { countByState, insertCaptures } from '../../support/capture-fixtures';
import { createMigratedDatabase } from '../../support/db';
import { FreezableProxy, startFreezableProxy } from '../../support/freezable-proxy';
import { exited } from '../../support/cli';
import { waitFor } from '../../support/wait-for';
import { killWorker, startWorkerProcess, workerStarted, WorkerProcess } from '../../support/worker-process';

jest.setTimeout(90_000);

const STATEMENT_MS = 1_000; // DB_STATEMENT_TIMEOUT's minimum: the client gives up 1 s + DB_CLIENT_GRACE_MS after sending

let db: { url: string; pool: Pool; drop(): Promise<void> };
let proxy: FreezableProxy;
let collector: Collector;
let child: WorkerProcess | undefined;
const pools: Pool[] = [];

beforeAll(async () => {
  db = await createMigratedDatabase('silent');
  proxy = await startFreezableProxy(db.url);
  collector = createCollector();
  await collector.start();
});
afterEach(async () => {
  await killWorker(child);
  child = undefined;
  for (const p of pools.splice(0)) await p.end().catch(() => undefined);
});
afterAll(async () => {
  await collector.stop();
  await proxy.stop();
  await db.drop();
});

function proxiedPool(): Pool {
  const pool = createPool(proxy.url, { max: 2, timeouts: { statementMs: STATEMENT_MS } });
  pools.push(pool);
  return pool;
}

describe('a silent database connection', () => {
  it('the client limit is statement_timeout + DB_CLIENT_GRACE_MS, and none where statements are unlimited (migrations)', () => {
    expect(sessionOptions({ statementMs: STATEMENT_MS }).query_timeout).toBe(STATEMENT_MS + DB_CLIENT_GRACE_MS);
    expect(sessionOptions({ statementMs: 0 })).not.toHaveProperty('query_timeout');
  });

  it('a query on it fails with an unanswered-query error, the connection is dropped and the next query gets a new one', async () => {
    const pool = proxiedPool();
    expect((await pool.query<{ v: number }>('select 1 as v')).rows).toEqual([{ v: 1 }]);
    expect(pool.totalCount).toBe(1);
    proxy.blackholeExisting();

    const err = await pool.query('select 2').catch((e: unknown) => e);
    expect(isUnansweredQuery(err)).toBe(true);
    expect(pool.totalCount).toBe(0); // not handed back to the pool with the query still in flight
    expect((await pool.query<{ v: number }>('select 3 as v')).rows).toEqual([{ v: 3 }]);
  });

  it('a transaction on it fails and its connection is dropped, not reused; the next transaction commits', async () => {
    const pool = proxiedPool();
    await pool.query('create table if not exists silent_tx (v int)');
    proxy.blackholeExisting();

    const err = await withTransaction(pool, (c) => c.query('insert into silent_tx values (1)')).catch(
      (e: unknown) => e,
    );
    expect(isUnansweredQuery(err)).toBe(true);
    expect(pool.totalCount).toBe(0);
    await withTransaction(pool, (c) => c.query('insert into silent_tx values (2)'));
    expect((await db.pool.query('select v from silent_tx order by v')).rows).toEqual([{ v: 2 }]);
  });

  it('a worker whose connections go silent delivers new work over new connections, without a restart, and still stops cleanly', async () => {
    child = startWorkerProcess({
      DATABASE_URL: proxy.url,
      CAPTURE_URL: collector.captureUrl,
      DB_STATEMENT_TIMEOUT: `${STATEMENT_MS}ms`,
      SHUTDOWN_TIMEOUT: '2s',
    });
    await workerStarted(child);
    const boss = createBoss(db.url, { max: 1 });
    await insertCaptures(db.pool, boss, 1);
    await waitFor(async () => (await countByState(db.pool)).delivered === 1, { what: 'the first capture delivered' });

    proxy.blackholeExisting(); // the worker's pooled connections and its LISTEN connection
    await insertCaptures(db.pool, boss, 2);
    await waitFor(async () => (await countByState(db.pool)).delivered === 3, {
      what: 'the captures delivered after the silence',
      timeoutMs: 60_000,
    });
    expect(collector.received()).toHaveLength(3);
    expect(child.exitCode).toBeNull();
    // the connections it gave up on (still open, never answering) do not hold up a graceful stop
    child.kill('SIGTERM');
    expect(await exited(child)).toEqual({ code: 0, signal: null });
    expect(child.output()).toContain('shutdown complete');
  });
});
