/**
 * The engine's events (Worker.events: claimed, settled, unsettled) on a real PostgreSQL: what observers are
 * told matches what landed, and a listener that throws breaks neither a claim nor a settle.
 */
import { createBoss, Pool, QUEUES } from '../../../libs/db';
import { createCaptureStore, type CaptureRow } from '../../../libs/captures/deliver';
import { createWorker, JobKind, Outcome, Worker } from '../../../libs/queue';
import type { WorkerEventMap } from '../../../libs/queue/events';
import { attemptsOf, captureStates, inconsistentCaptures, insertCaptures } from '../../support/capture-fixtures';
import { createMigratedDatabase } from '../../support/db';
import { memoryLogger } from '../../support/ingress-harness';
import { waitFor } from '../../support/wait-for';
import { TEST_ENGINE_CONFIG } from '../../support/worker-harness';

let db: { url: string; pool: Pool; drop(): Promise<void> };
let worker: Worker | undefined;

beforeAll(async () => {
  db = await createMigratedDatabase('worker_events');
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

/** Each row's first attempt is rate limited (429, an uncounted retry due at once), its second delivered (200). */
function rateLimitedOnceKind(): JobKind<CaptureJobRow> {
  const tried = new Set<string>();
  return {
    queue: QUEUES.capture,
    store: createCaptureStore(),
    execute: (job) => {
      if (tried.has(job.id)) return Promise.resolve(Outcome.delivered({ status: 200 }));
      tried.add(job.id);
      return Promise.resolve(
        Outcome.retry(0, { uncounted: true, status: 429, errorCode: 'RATE', error: 'rate limited' }),
      );
    },
  };
}

function start(logger = memoryLogger('error').logger): Worker {
  return createWorker({
    pool: db.pool,
    boss: createBoss(db.url, { max: 1 }),
    logger,
    databaseUrl: db.url,
    kinds: [rateLimitedOnceKind()],
    config: TEST_ENGINE_CONFIG,
    random: () => 0,
  });
}

const N = 5;

describe('Worker.events', () => {
  it('settled tells every landed attempt (state, status) and claimed every claim statement; they match the audit trail', async () => {
    const captures = await insertCaptures(db.pool, createBoss(db.url, { max: 1 }), N);
    worker = start();
    const settled: WorkerEventMap['settled'][] = [];
    const claimed: WorkerEventMap['claimed'][] = [];
    worker.events.on('settled', (e) => settled.push(e));
    worker.events.on('claimed', (e) => claimed.push(e));
    await worker.start();
    await waitFor(async () => (await captureStates(db.pool)).every((c) => c.state === 'delivered') || undefined, {
      what: `${N} delivered`,
    });
    await waitFor(() => settled.length === 2 * N || undefined, { what: 'every settle told' });
    const byState = (s: string) => settled.filter((e) => e.state === s);
    expect(byState('pending').map((e) => [e.queue, e.status])).toEqual(Array(N).fill([QUEUES.capture, 429]));
    expect(byState('delivered').map((e) => [e.queue, e.status])).toEqual(Array(N).fill([QUEUES.capture, 200]));
    for (const e of settled) expect(e.durationMs).toBeGreaterThanOrEqual(0);
    // each attempt names its row's bot (the fixtures' captures are bot 1's)
    expect([...new Set(settled.map((e) => e.botId))]).toEqual(['1']);
    expect(claimed.every((e) => e.queue === QUEUES.capture && e.durationMs >= 0)).toBe(true);
    expect(claimed.reduce((a, e) => a + e.count, 0)).toBe(worker.kinds[0].stats.claimed);
    expect(worker.kinds[0].stats.claimed).toBe(2 * N);
    let audited = 0;
    for (const c of captures) audited += (await attemptsOf(db.pool, c.id)).length;
    expect(audited).toBe(settled.length);
  });

  it('an attempt still running at stop is released: unsettled tells it, with its queue and bot', async () => {
    await insertCaptures(db.pool, createBoss(db.url, { max: 1 }), 2);
    const started: string[] = [];
    // attempts that end only when aborted, so the stop has to release them
    const hanging: JobKind<CaptureJobRow> = {
      queue: QUEUES.capture,
      store: createCaptureStore(),
      execute: (job, ctx) => {
        started.push(job.id);
        return new Promise((resolve) =>
          ctx.signal.addEventListener('abort', () => resolve(Outcome.retry(0, { error: 'stopped' }))),
        );
      },
    };
    worker = createWorker({
      pool: db.pool,
      boss: createBoss(db.url, { max: 1 }),
      logger: memoryLogger('error').logger,
      databaseUrl: db.url,
      kinds: [hanging],
      config: TEST_ENGINE_CONFIG,
    });
    const unsettled: WorkerEventMap['unsettled'][] = [];
    worker.events.on('unsettled', (e) => unsettled.push(e));
    await worker.start();
    await waitFor(() => started.length === 2 || undefined, { what: 'both attempts running' });
    await worker.stop({ timeoutMs: 100 });
    expect(unsettled).toEqual([
      { queue: QUEUES.capture, botId: '1', outcome: 'released' },
      { queue: QUEUES.capture, botId: '1', outcome: 'released' },
    ]);
    expect(worker.kinds[0].stats.released).toBe(2);
    expect((await captureStates(db.pool)).map((c) => c.state)).toEqual(['pending', 'pending']);
  });

  it('a listener that throws breaks neither a claim nor a settle: the work lands, later listeners still hear, the error is logged once per event', async () => {
    const captures = await insertCaptures(db.pool, createBoss(db.url, { max: 1 }), N);
    const logs = memoryLogger('error');
    worker = start(logs.logger);
    let thrown = 0;
    const boom = () => {
      thrown++;
      throw new Error('observer bug');
    };
    worker.events.on('claimed', boom);
    worker.events.on('settled', boom);
    const settled: WorkerEventMap['settled'][] = [];
    worker.events.on('settled', (e) => settled.push(e));
    await worker.start();
    await waitFor(async () => (await captureStates(db.pool)).every((c) => c.state === 'delivered') || undefined, {
      what: `${N} delivered despite the throwing listener`,
    });
    expect(await inconsistentCaptures(db.pool)).toEqual([]);
    const states = await captureStates(db.pool);
    expect(states.map((s) => [s.state, s.jobState])).toEqual(Array(N).fill(['delivered', 'completed']));
    for (const c of captures)
      expect((await attemptsOf(db.pool, c.id)).map((a) => [a.outcome, a.http_status])).toEqual([
        ['retry', 429],
        ['delivered', 200],
      ]);
    await waitFor(() => settled.length === 2 * N || undefined, { what: 'the later listener heard every settle' });
    expect(worker.kinds[0].stats).toMatchObject({ delivered: N, retried: N, failed: 0, fenced: 0, claimErrors: 0 });
    expect(worker.kinds[0].running).toBe(true);
    expect(thrown).toBeGreaterThanOrEqual(2 * N + 1);
    const reported = logs
      .lines()
      .filter((l) => String(l.msg).startsWith('an observer of this event threw'))
      .map((l) => [l.event, (l.err as { message: string }).message]);
    expect(reported.sort()).toEqual([
      ['claimed', 'observer bug'],
      ['settled', 'observer bug'],
    ]);
  });
});
