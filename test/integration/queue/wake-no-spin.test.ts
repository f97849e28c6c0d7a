/**
 * A wake-up that finds no work must be consumed: the claim loop claims again at once when work was
 * announced during a claim, but only once per announcement. It used to keep the flag set and claim
 * in a tight loop forever; with a claim that needs no I/O (update dispatch before getMe answered)
 * that loop never yielded to the event loop at all: no timer, no log line, no SIGTERM (the soak's
 * "worker ignores the final SIGTERM" hang). And a kind that waits for something (dispatch for getMe)
 * is claimed as soon as it is ready, not at the loop's next poll.
 */
import { setImmediate as nextMacrotask } from 'node:timers/promises';
import { createBoss, Pool, QUEUES } from '../../../libs/db';
import { createCaptureStore, type CaptureRow } from '../../../libs/captures/deliver';
import { createWorker, JobKind, Outcome, Worker } from '../../../libs/queue';
import { captureStates, insertCaptures } from '../../support/capture-fixtures';
import { waitFor } from '../../support/wait-for';
import { createMigratedDatabase } from '../../support/db';
import { TEST_ENGINE_CONFIG, testLogger } from '../../support/worker-harness';

let db: { url: string; pool: Pool; drop(): Promise<void> };
let worker: Worker | undefined;

beforeAll(async () => {
  db = await createMigratedDatabase('wakespin');
});

afterEach(async () => {
  await worker?.stop({ timeoutMs: 5_000 });
  worker = undefined;
  await db.pool.query('truncate relay.captures, relay.attempts');
});

afterAll(async () => {
  await db.drop();
});

type CaptureJobRow = CaptureRow & Record<string, unknown>;

/** A capture kind whose claim finds nothing; `during` runs inside every claim (before it answers). */
function emptyKind(counter: { claims: number }, during: () => void, io: 'database' | 'none'): JobKind<CaptureJobRow> {
  const base = createCaptureStore();
  return {
    queue: QUEUES.capture,
    store: {
      ...base,
      async claim(c, args) {
        counter.claims++;
        during();
        if (io === 'database') return base.claim(c, args);
        await nextMacrotask(); // yields to the event loop, so the test can count what a spin does
        return [];
      },
      nextDueInMs: (c, now) => (io === 'database' ? base.nextDueInMs(c, now) : Promise.resolve(null)),
    },
    execute: () => Promise.resolve(Outcome.delivered({ status: 200 })),
  };
}

function start(kind: JobKind<CaptureJobRow>): Worker {
  return createWorker({
    pool: db.pool,
    boss: createBoss(db.url, { max: 1 }),
    logger: testLogger(),
    databaseUrl: db.url,
    kinds: [kind],
    listen: false,
    pollIntervalMs: 60_000,
    config: TEST_ENGINE_CONFIG,
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.each(['none', 'database'] as const)('claims that find nothing (%s I/O)', (io) => {
  it('a wake-up announced during a claim causes one more claim, not a loop', async () => {
    const counter = { claims: 0 };
    let announce = false;
    worker = start(
      emptyKind(
        counter,
        () => {
          if (announce) {
            announce = false;
            worker!.kinds[0].wake(); // new work announced while this claim runs
          }
        },
        io,
      ),
    );
    await worker.start();
    await sleep(300);
    const settled = counter.claims;
    announce = true;
    worker.kinds[0].wake();
    await sleep(500);
    // the wake-up's claim, the one announced during it; never hundreds
    expect(counter.claims - settled).toBeGreaterThanOrEqual(2);
    expect(counter.claims - settled).toBeLessThanOrEqual(3);
  });
});

it('a kind that becomes ready is claimed at once, not at the next poll', async () => {
  const counter = { claims: 0 };
  let ready = false;
  let markReady!: () => void;
  const whenReady = new Promise<void>((r) => (markReady = r));
  const base = emptyKind(counter, () => undefined, 'none');
  let claimsAfterReady = 0;
  worker = start({
    ...base,
    whenReady,
    store: {
      ...base.store,
      claim: (c, args) => {
        if (ready) claimsAfterReady++;
        return base.store.claim(c, args);
      },
    },
  });
  await worker.start();
  await sleep(200);
  ready = true; // the first claim was at start; the next poll is 60 s away
  markReady();
  await sleep(300);
  // claimed at once on readiness (a claim that finds nothing), and then waiting, not spinning
  expect(claimsAfterReady).toBeGreaterThanOrEqual(1);
  expect(claimsAfterReady).toBeLessThanOrEqual(2);
});

it('a claim that keeps failing backs off through wake-ups (a NOTIFY does not cut the backoff short)', async () => {
  const counter = { claims: 0 };
  const base = emptyKind(counter, () => undefined, 'none');
  worker = start({
    ...base,
    store: {
      ...base.store,
      claim: () => {
        counter.claims++;
        return Promise.reject(Object.assign(new Error('permission denied for table captures'), { code: '42501' }));
      },
    },
  });
  await worker.start();
  const kindWorker = worker.kinds[0];
  const noise = setInterval(() => kindWorker.wake(), 5); // work announced all the time
  try {
    await sleep(650);
  } finally {
    clearInterval(noise);
  }
  // backoff 100, 200, 400 ms: claims at about 0, 100, 300 ms (600 with a late timer); without it ~130
  expect(counter.claims).toBeGreaterThanOrEqual(2);
  expect(counter.claims).toBeLessThanOrEqual(5);
  expect(kindWorker.stats.claimErrors).toBe(counter.claims);
});

it('rows due now but locked by another session are polled with a growing wait, not every 5 ms', async () => {
  const boss = createBoss(db.url, { max: 1 });
  const [c] = await insertCaptures(db.pool, boss, 1);
  const locker = await db.pool.connect();
  try {
    await locker.query('begin');
    await locker.query('select 1 from relay.captures where id = $1 for update', [c.id]);
    const counter = { claims: 0 };
    worker = start(emptyKind(counter, () => undefined, 'database'));
    await worker.start();
    await sleep(1_000);
    // 5, 10, 20 … 640 ms: about 8 claims in a second; a fixed 5 ms floor made about 150
    expect(counter.claims).toBeGreaterThanOrEqual(3);
    expect(counter.claims).toBeLessThanOrEqual(20);
    await locker.query('rollback');
    // the lock gone, the row is claimed at the next try (within the grown wait, not the 60 s poll)
    await waitFor(async () => (await captureStates(db.pool))[0]?.state === 'delivered', {
      what: 'capture delivered',
      timeoutMs: 10_000,
    });
  } finally {
    await locker.query('rollback').catch(() => undefined);
    locker.release();
  }
});
