/**
 * What happens when someone drives tg-relay's queues through pg-boss's own API instead of the admin
 * API (README, "pg-boss is a job ledger"): our rows decide delivery, so pg-boss's cancel does not
 * cancel, a foreign work()/fetch consumer does not deliver or block anything, and retry does not
 * retry — each only puts the ledger out of step with the row. These tests pin that behaviour.
 */
import type { BossLedger } from '../../../libs/db/boss';
import { createBoss, Pool, QUEUES } from '../../../libs/db';
import { createCollector, Collector } from '../../../libs/sandbox';
import { captureStates, countByState, insertCaptures, makeCapture } from '../../support/capture-fixtures';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import { startCaptureWorker } from '../../support/worker-harness';
import type { Worker } from '../../../libs/queue';

let db: { url: string; pool: Pool; drop(): Promise<void> };
let collector: Collector;
let boss: BossLedger;
let worker: Worker | undefined;

beforeAll(async () => {
  db = await createMigratedDatabase('misuse');
  collector = createCollector();
  await collector.start();
  boss = createBoss(db.url, { max: 2 });
  await boss.start();
});
afterEach(async () => {
  await worker?.stop({ timeoutMs: 5_000 });
  worker = undefined;
  collector.reset();
  collector.setFaults(null);
});
afterAll(async () => {
  await boss.stop({ graceful: false, wait: true });
  await collector.stop();
  await db.drop();
});

const stateOf = async (id: string) => (await captureStates(db.pool)).find((c) => c.id === id)!;

describe("pg-boss's API on tg-relay's queues", () => {
  it("boss.cancel does not cancel: the capture is delivered anyway and its job stays 'cancelled'", async () => {
    const [c] = await insertCaptures(db.pool, boss, [makeCapture()]);
    await boss.cancel(QUEUES.capture, c.jobId);
    worker = startCaptureWorker({ url: db.url, pool: db.pool, captureUrl: collector.captureUrl });
    await worker.start();
    await waitFor(async () => (await stateOf(c.id)).state === 'delivered', { what: 'delivered despite cancel' });
    expect(collector.byKey().get(c.key)).toHaveLength(1);
    expect((await stateOf(c.id)).jobState).toBe('cancelled');
  });

  it("a foreign work()/fetch consumer gets only `{ id }`; the row is still delivered once by tg-relay and the ledger says what the foreigner said ('failed')", async () => {
    const [c] = await insertCaptures(db.pool, boss, [makeCapture()]);
    const [job] = await boss.fetch<{ id: string }>(QUEUES.capture, { batchSize: 1 });
    expect(job.id).toBe(c.jobId);
    expect(job.data).toEqual({ id: c.id }); // no payload: the text lives in relay.captures
    await boss.fail(QUEUES.capture, job.id, { by: 'someone else' });
    worker = startCaptureWorker({ url: db.url, pool: db.pool, captureUrl: collector.captureUrl });
    await worker.start();
    await waitFor(async () => (await stateOf(c.id)).state === 'delivered', { what: 'delivered by tg-relay' });
    expect(collector.byKey().get(c.key)).toHaveLength(1);
    expect((await stateOf(c.id)).jobState).toBe('failed');
  });

  it("boss.retry on a failed capture's job retries nothing: the row stays failed, the job waits in 'retry' for nobody", async () => {
    collector.setFaults({ rejectRate: 1, rejectStatus: 422 });
    const [c] = await insertCaptures(db.pool, boss, [makeCapture({ maxAttempts: 1 })]);
    worker = startCaptureWorker({ url: db.url, pool: db.pool, captureUrl: collector.captureUrl });
    await worker.start();
    await waitFor(async () => (await stateOf(c.id)).state === 'failed', { what: 'failed terminally' });
    collector.setFaults(null);
    await boss.retry(QUEUES.capture, c.jobId);
    worker.kinds[0].wake();
    await new Promise((r) => setTimeout(r, 500)); // give a wrongly-woken claim loop the chance to deliver
    const s = await stateOf(c.id);
    expect({ state: s.state, jobState: s.jobState }).toEqual({ state: 'failed', jobState: 'retry' });
    expect(collector.byKey().get(c.key) ?? []).toHaveLength(0); // rejected calls are not receipts; none was accepted
    expect((await countByState(db.pool)).failed).toBe(1);
  });
});
