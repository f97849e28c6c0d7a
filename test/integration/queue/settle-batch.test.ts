/**
 * An outcome batch is one statement (settle + ledger mirror + audit rows, no transaction around it):
 * a claim lost in the middle of a batch is fenced while the others land, a retry's audit row still
 * names its next attempt, and a statement that fails part-way leaves nothing of the batch behind.
 */
import { createBoss, Pool, QUEUES } from '../../../libs/db';
import { createCaptureStore } from '../../../libs/captures/deliver';
import { Outcome, type JobKind } from '../../../libs/queue';
import { createSettler } from '../../../libs/queue/settler';
import { createWorkerEvents } from '../../../libs/queue/events';
import { decideSettlement } from '../../../libs/queue/settlement';
import type { Finished } from '../../../libs/queue/held-claims';
import type { ClaimedJob } from '../../../libs/queue/job-kind';
import { insertCaptures } from '../../support/capture-fixtures';
import { createMigratedDatabase } from '../../support/db';
import { TEST_ENGINE_CONFIG, testLogger } from '../../support/worker-harness';

let db: { url: string; pool: Pool; drop(): Promise<void> };
const boss = () => createBoss(db.url, { max: 1 });

beforeAll(async () => {
  db = await createMigratedDatabase('settlebatch');
});
afterAll(async () => {
  await db.drop();
});
afterEach(async () => {
  await db.pool.query('truncate relay.captures, relay.attempts');
});

const store = createCaptureStore();
const kind: JobKind = { queue: QUEUES.capture, store, execute: () => Promise.resolve(Outcome.delivered()) };

function settler() {
  const stats = { delivered: 0, retried: 0, failed: 0, fenced: 0 };
  const logger = testLogger();
  const events = createWorkerEvents(logger);
  const told: string[] = [];
  events.on('settled', (e) => told.push(`${e.state} ${e.botId}`));
  events.on('unsettled', (e) => told.push(`${e.outcome} ${e.botId}`));
  const s = createSettler(kind, {
    pool: db.pool,
    boss: boss(),
    logger,
    workerId: 'w1',
    stats,
    events,
    onRetrySettled: () => undefined,
  });
  return { s, stats, told };
}

function finished(job: ClaimedJob, outcome: Outcome, durationMs = 3): Finished<Record<string, unknown>, unknown> {
  const at = new Date();
  return {
    job,
    outcome,
    decision: decideSettlement(job, outcome, TEST_ENGINE_CONFIG.retry),
    startedAt: at,
    finishedAt: at,
    durationMs,
  };
}

async function claim(n: number): Promise<ClaimedJob[]> {
  await insertCaptures(db.pool, boss(), n);
  const jobs = await store.claim(db.pool, { limit: n, workerId: 'w1', now: null, queue: QUEUES.capture });
  expect(jobs).toHaveLength(n);
  return jobs.sort((a, b) => Number(a.id) - Number(b.id));
}

async function rowsAndJobs() {
  const { rows } = await db.pool.query(
    `select c.id::text, c.state, c.claim_id::text, j.state::text as job_state, c.next_attempt_at
       from relay.captures c join tg_relay_boss.job j on j.id = c.job_id order by c.id`,
  );
  return rows;
}

async function audits() {
  const { rows } = await db.pool.query(
    `select subject_id::text, outcome, error_code, details from relay.attempts order by subject_id`,
  );
  return rows;
}

it('a batch in which one claim was lost settles the others; the lost one is fenced and audited as such', async () => {
  const [a, b, c] = await claim(3);
  // b's claim is recovered and claimed again by another worker before the batch lands
  await db.pool.query(`update relay.captures set claim_id = gen_random_uuid(), worker_id = 'w2' where id = $1`, [b.id]);
  const { s, stats, told } = settler();
  await s.write([
    finished(a, Outcome.delivered({ status: 200 })),
    finished(b, Outcome.delivered({ status: 200 })),
    finished(c, Outcome.retry(60_000, { status: 503, errorCode: 'HTTP_503', error: 'collector answered 503' })),
  ]);
  const rows = await rowsAndJobs();
  expect(rows.map((r) => [r.state, r.job_state])).toEqual([
    ['delivered', 'completed'],
    ['delivering', 'active'], // the redelivery owns it: neither row nor job touched
    ['pending', 'retry'],
  ]);
  expect(stats).toEqual({ delivered: 1, retried: 1, failed: 0, fenced: 1 });
  // observers hear each outcome with its row's bot, the lost claim as fenced
  expect(told).toEqual(['delivered 1', 'fenced 1', 'pending 1']);
  const audit = await audits();
  expect(audit.map((r) => [r.outcome, r.error_code])).toEqual([
    ['delivered', null],
    ['delivered', 'RELAY_CLAIM_LOST'],
    ['retry', 'HTTP_503'],
  ]);
  expect(audit[1].details).toEqual({ fenced: true });
  // the retry's audit row names its next attempt as the row has it (ms, as JSON writes a Date)
  expect(audit[2].details.nextAttemptAt).toBe(new Date(rows[2].next_attempt_at).toISOString());
  expect(audit[2].details.delayMs).toBeGreaterThanOrEqual(0);
});

it('a failed item moves its ledger job to failed with its reason, in the same statement', async () => {
  const [a] = await claim(1);
  const { s } = settler();
  await s.write([finished(a, Outcome.terminal('collector refused it', { status: 422 }))]);
  const { rows } = await db.pool.query(
    `select c.state, j.state::text as job_state, j.output from relay.captures c join tg_relay_boss.job j on j.id = c.job_id`,
  );
  expect(rows).toEqual([{ state: 'failed', job_state: 'failed', output: { reason: 'collector refused it' } }]);
});

it('a batch statement that fails part-way (its audit insert) leaves no row settled, no job moved and no audit row', async () => {
  const [a, b] = await claim(2);
  const { s } = settler();
  // a duration past integer range makes the audit insert, the statement's last part, fail
  await expect(
    s.write([finished(a, Outcome.delivered({ status: 200 })), finished(b, Outcome.delivered({ status: 200 }), 3e9)]),
  ).rejects.toThrow(/out of range/);
  expect((await rowsAndJobs()).map((r) => [r.state, r.job_state])).toEqual([
    ['delivering', 'active'],
    ['delivering', 'active'],
  ]);
  expect(await audits()).toEqual([]);
});
