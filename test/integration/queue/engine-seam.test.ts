import { createBoss, Pool, QUEUES } from '../../../libs/db';
import { createCaptureStore, type CaptureRow } from '../../../libs/captures/deliver';
import { createWorker, JobKind, Outcome, Settlement, Worker } from '../../../libs/queue';
import { attemptsOf, captureStates, inconsistentCaptures, insertCaptures } from '../../support/capture-fixtures';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import { TEST_ENGINE_CONFIG, testLogger } from '../../support/worker-harness';

let db: { url: string; pool: Pool; drop(): Promise<void> };
let worker: Worker | undefined;

beforeAll(async () => {
  db = await createMigratedDatabase('seam');
});

afterEach(async () => {
  await worker?.stop({ timeoutMs: 5_000 });
  worker = undefined;
  await db.pool.query('truncate relay.captures, relay.attempts');
});

afterAll(async () => {
  await db.drop();
});

/** The row type of the capture store (createCaptureStore's). */
type CaptureJobRow = CaptureRow & Record<string, unknown>;

/** A job kind on relay.captures whose attempts return scripted outcomes, recording what settle saw. */
function scriptedKind(script: Outcome[], seen: Settlement[]): JobKind<CaptureJobRow> {
  const base = createCaptureStore();
  let i = 0;
  return {
    queue: QUEUES.capture,
    store: {
      ...base,
      async settle(c, items, now) {
        seen.push(...items);
        return base.settle(c, items, now);
      },
    },
    execute: () => Promise.resolve(script[Math.min(i++, script.length - 1)]),
  };
}

function start(kind: JobKind<CaptureJobRow>, maxAttempts = 2): Worker {
  return createWorker({
    pool: db.pool,
    boss: createBoss(db.url, { max: 1 }),
    logger: testLogger(),
    databaseUrl: db.url,
    kinds: [kind],
    config: { ...TEST_ENGINE_CONFIG, retry: { ...TEST_ENGINE_CONFIG.retry, maxAttempts } },
    random: () => 0,
  });
}

describe('the job-kind seam', () => {
  it('uncounted retries (rate limits) never spend the budget; labels and effects reach the audit and the settle', async () => {
    const seen: Settlement[] = [];
    const script = [
      Outcome.retry(0, { uncounted: true, status: 429, errorCode: 'RATE', error: 'rate limited' }),
      Outcome.retry(0, { uncounted: true, status: 429, errorCode: 'RATE', error: 'rate limited' }),
      Outcome.retry(0, { uncounted: true, status: 429, errorCode: 'RATE', error: 'rate limited' }),
      Outcome.retry(undefined, { label: 'ambiguous', errorCode: 'ECONNRESET', error: 'reset after sending' }),
      Outcome.delivered({ status: 200, effects: { messageId: 77 } }),
    ];
    const [c] = await insertCaptures(db.pool, createBoss(db.url, { max: 1 }), 1);
    worker = start(scriptedKind(script, seen), 2); // a budget of 2 counted attempts
    await worker.start();
    await waitFor(async () => (await captureStates(db.pool))[0].state === 'delivered', { what: 'delivered' });
    const [s] = await captureStates(db.pool);
    expect(s).toMatchObject({ state: 'delivered', jobState: 'completed', attempts: 2 });
    expect(await inconsistentCaptures(db.pool)).toEqual([]);
    const audit = await attemptsOf(db.pool, c.id);
    expect(audit.map((a) => [a.attempt, a.outcome, a.error_code, a.details?.uncounted ?? false])).toEqual([
      [1, 'retry', 'RATE', true],
      [1, 'retry', 'RATE', true],
      [1, 'retry', 'RATE', true],
      [1, 'ambiguous', 'ECONNRESET', false],
      [2, 'delivered', null, false],
    ]);
    expect(seen.at(-1)).toMatchObject({ state: 'delivered', effects: { messageId: 77 } });
  });

  it('a handler that throws is a counted retry with RELAY_HANDLER_THREW', async () => {
    const [c] = await insertCaptures(db.pool, createBoss(db.url, { max: 1 }), 1);
    worker = start(
      {
        queue: QUEUES.capture,
        store: createCaptureStore(),
        execute: () => Promise.reject(new Error('boom')),
      },
      2,
    );
    await worker.start();
    await waitFor(async () => (await captureStates(db.pool))[0].state === 'failed', { what: 'failed' });
    expect((await attemptsOf(db.pool, c.id)).map((a) => [a.outcome, a.error_code, a.error])).toEqual([
      ['retry', 'RELAY_HANDLER_THREW', 'boom'],
      ['failed', 'RELAY_HANDLER_THREW', 'boom'],
    ]);
  });

  it('runs at most `concurrency` attempts at once; finished ones wait for their outcome write without a slot, up to as many again', async () => {
    const concurrency = 4;
    let gate!: () => void;
    const opened = new Promise<void>((r) => (gate = r));
    let running = 0;
    let mostRunning = 0;
    let started = 0;
    const base = createCaptureStore();
    const kind: JobKind<CaptureJobRow> = {
      queue: QUEUES.capture,
      store: {
        ...base,
        // every outcome write waits for the gate: held claims pile up behind it
        async settle(c, items, now) {
          await opened;
          return base.settle(c, items, now);
        },
      },
      async execute() {
        started++;
        mostRunning = Math.max(mostRunning, ++running);
        await new Promise((r) => setTimeout(r, 20));
        running--;
        return Outcome.delivered({ status: 200 });
      },
    };
    await insertCaptures(db.pool, createBoss(db.url, { max: 1 }), 30);
    worker = createWorker({
      pool: db.pool,
      boss: createBoss(db.url, { max: 1 }),
      logger: testLogger(),
      databaseUrl: db.url,
      kinds: [kind],
      config: { ...TEST_ENGINE_CONFIG, concurrency },
    });
    await worker.start();
    await waitFor(() => started >= 2 * concurrency && running === 0, { what: 'twice the slots attempted' });
    // no outcome has landed: the claims held wait for it, and the loop claims no more
    await new Promise((r) => setTimeout(r, 300));
    expect(started).toBe(2 * concurrency);
    expect((await captureStates(db.pool)).filter((c) => c.state === 'delivered')).toEqual([]);
    gate();
    await waitFor(async () => (await captureStates(db.pool)).every((c) => c.state === 'delivered'), {
      what: 'all delivered',
    });
    expect(started).toBe(30);
    expect(mostRunning).toBeLessThanOrEqual(concurrency);
    expect(await inconsistentCaptures(db.pool)).toEqual([]);
  });
});
