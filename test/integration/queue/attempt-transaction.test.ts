/**
 * The engine's attempt-transaction seam (libs/queue/attempt-transaction.ts): an outcome handed over
 * with the attempt's own open transaction is settled on it alone and committed with it; a lost
 * claim, a refused outcome or a shutdown rolls it back. Effects that conflict run the attempt again,
 * not counted.
 */
import type { PoolClient } from 'pg';
import { createCaptureStore, type CaptureRow } from '../../../libs/captures/deliver';
import { beginStatement, createBoss, Pool, QUEUES } from '../../../libs/db';
import { createWorker, JobKind, Outcome, type AttemptTransaction, type Worker } from '../../../libs/queue';
import { attemptsOf, captureStates, inconsistentCaptures, insertCaptures } from '../../support/capture-fixtures';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import { TEST_ENGINE_CONFIG, testLogger } from '../../support/worker-harness';

let db: { url: string; pool: Pool; drop(): Promise<void> };
let worker: Worker | undefined;

beforeAll(async () => {
  db = await createMigratedDatabase('seam_tx');
  await db.pool.query(`create table own_rows (capture_id bigint not null, attempt int not null)`);
});
afterEach(async () => {
  await worker?.stop({ timeoutMs: 5_000 });
  worker = undefined;
  await db.pool.query('truncate relay.captures, relay.attempts, own_rows');
});
afterAll(async () => {
  await db.drop();
});

type Row = CaptureRow & Record<string, unknown>;
interface Effects {
  conflict?: boolean;
}

/** An open transaction on the worker's pool with the attempt's own row in it. */
async function ownTransaction(captureId: string, attempt: number): Promise<AttemptTransaction> {
  const client: PoolClient = await db.pool.connect();
  await client.query(beginStatement(db.pool));
  await client.query('insert into own_rows (capture_id, attempt) values ($1, $2)', [captureId, attempt]);
  let ended = false;
  return {
    client,
    async end(commit) {
      if (ended) throw new Error('ended twice');
      ended = true;
      try {
        await client.query(commit ? 'commit' : 'rollback');
      } finally {
        client.release();
      }
    },
  };
}

/** A kind on relay.captures whose attempts run `attempt`; effects flagged `conflict` throw an attempt conflict. */
function kind(attempt: JobKind<Row, Effects>['execute']): JobKind<Row, Effects> {
  const base = createCaptureStore();
  return {
    queue: QUEUES.capture,
    store: {
      ...base,
      async settle(c, items, now) {
        const settled = await base.settle(
          c,
          items.map(({ effects: _e, ...s }) => s),
          now,
        );
        if (items.some((i) => i.effects?.conflict))
          throw Object.assign(new Error('read data changed meanwhile'), { code: 'TEST_CONFLICT', retryAttempt: true });
        return settled;
      },
    },
    execute: attempt,
  };
}

function start(k: JobKind<Row, Effects>): Worker {
  return createWorker({
    pool: db.pool,
    boss: createBoss(db.url, { max: 1 }),
    logger: testLogger(),
    databaseUrl: db.url,
    kinds: [k],
    config: { ...TEST_ENGINE_CONFIG, retry: { ...TEST_ENGINE_CONFIG.retry, baseMs: 20, capMs: 50, maxAttempts: 3 } },
  });
}

const ownRows = async () =>
  (await db.pool.query(`select capture_id::text as id, attempt from own_rows order by capture_id, attempt`)).rows;
const openTransactions = async () =>
  Number(
    (
      await db.pool.query(
        `select count(*) from pg_stat_activity where datname = current_database() and state like 'idle in transaction%'`,
      )
    ).rows[0].count,
  );

describe('an outcome on the attempt’s own transaction', () => {
  it('commits the attempt’s rows with the settle, the ledger job and the audit row', async () => {
    const caps = await insertCaptures(db.pool, createBoss(db.url, { max: 1 }), 3);
    worker = start(
      kind(async (job) => Outcome.delivered({ transaction: await ownTransaction(job.id, job.attempt), status: 200 })),
    );
    await worker.start();
    await waitFor(async () => (await captureStates(db.pool)).every((c) => c.state === 'delivered'), {
      what: 'delivered',
    });
    expect(await ownRows()).toEqual(caps.map((c) => ({ id: c.id, attempt: 1 })));
    expect(await inconsistentCaptures(db.pool)).toEqual([]);
    expect((await attemptsOf(db.pool, caps[0].id)).map((a) => a.outcome)).toEqual(['delivered']);
    await waitFor(async () => (await openTransactions()) === 0, { what: 'connections given back' });
  });

  it('is rolled back when the claim was lost meanwhile: the redelivery owns the row', async () => {
    const [c] = await insertCaptures(db.pool, createBoss(db.url, { max: 1 }), 1);
    let first = true;
    worker = start(
      kind(async (job) => {
        const tx = await ownTransaction(job.id, job.attempt);
        if (first) {
          first = false;
          // another worker recovered the claim (as stale recovery would)
          await db.pool.query(
            `update relay.captures set state = 'pending', claim_id = null, next_attempt_at = now() where id = $1`,
            [job.id],
          );
        }
        return Outcome.delivered({ transaction: tx });
      }),
    );
    await worker.start();
    await waitFor(async () => (await attemptsOf(db.pool, c.id)).length === 2, { what: 'both attempts audited' });
    const audit = await attemptsOf(db.pool, c.id);
    expect((await captureStates(db.pool))[0].state).toBe('delivered');
    expect(audit.map((a) => [a.outcome, a.error_code])).toEqual(
      expect.arrayContaining([
        ['delivered', 'RELAY_CLAIM_LOST'],
        ['delivered', null],
      ]),
    );
    // only the redelivery's own row committed
    expect(await ownRows()).toHaveLength(1);
    await waitFor(async () => (await openTransactions()) === 0, { what: 'connections given back' });
  });

  it('effects that conflict roll the attempt’s rows back and run it again, not counted', async () => {
    const [c] = await insertCaptures(db.pool, createBoss(db.url, { max: 1 }), 1);
    worker = start(
      kind(async (job) => {
        const n = (await db.pool.query(`select count(*)::int as n from relay.attempts where subject_id = $1`, [job.id]))
          .rows[0].n as number;
        return Outcome.delivered<Effects>({
          transaction: await ownTransaction(job.id, n + 1),
          effects: { conflict: n < 2 },
        });
      }),
    );
    await worker.start();
    await waitFor(async () => (await captureStates(db.pool))[0].state === 'delivered', { what: 'delivered' });
    const audit = await attemptsOf(db.pool, c.id);
    expect(audit.map((a) => [a.attempt, a.outcome, a.error_code, a.details?.uncounted ?? false])).toEqual([
      [1, 'retry', 'TEST_CONFLICT', true],
      [1, 'retry', 'TEST_CONFLICT', true],
      [1, 'delivered', null, false],
    ]);
    expect(await ownRows()).toEqual([{ id: c.id, attempt: 3 }]);
  });

  it('effects that conflict without an own transaction (the batch path) also run the attempt again', async () => {
    const caps = await insertCaptures(db.pool, createBoss(db.url, { max: 1 }), 4);
    const tries = new Map<string, number>();
    worker = start(
      kind((job) => {
        const n = (tries.get(job.id) ?? 0) + 1;
        tries.set(job.id, n);
        // the first capture conflicts once; the others of its batch land at once
        return Promise.resolve(Outcome.delivered<Effects>({ effects: { conflict: job.id === caps[0].id && n === 1 } }));
      }),
    );
    await worker.start();
    await waitFor(async () => (await captureStates(db.pool)).every((s) => s.state === 'delivered'), {
      what: 'delivered',
    });
    expect((await attemptsOf(db.pool, caps[0].id)).map((a) => [a.outcome, a.error_code])).toEqual([
      ['retry', 'TEST_CONFLICT'],
      ['delivered', null],
    ]);
    for (const other of caps.slice(1))
      expect((await attemptsOf(db.pool, other.id)).map((a) => a.outcome)).toEqual(['delivered']);
  });

  it('is rolled back when the claim is given back at shutdown', async () => {
    await insertCaptures(db.pool, createBoss(db.url, { max: 1 }), 1);
    let opened = false;
    worker = start(
      kind(async (job, ctx) => {
        const tx = await ownTransaction(job.id, job.attempt);
        opened = true;
        await new Promise((r) => ctx.signal.addEventListener('abort', r, { once: true }));
        return Outcome.delivered({ transaction: tx });
      }),
    );
    await worker.start();
    await waitFor(() => opened, { what: 'the attempt opened its transaction' });
    await worker.stop({ timeoutMs: 100 });
    worker = undefined;
    expect((await captureStates(db.pool))[0].state).toBe('pending');
    expect(await ownRows()).toEqual([]);
    await waitFor(async () => (await openTransactions()) === 0, { what: 'connection given back' });
  });
});
