/**
 * Retry (one and bulk), cancel and audit against captures that a real worker engine delivered or
 * failed (in-process worker, sandbox collector).
 */
import type { FastifyInstance } from 'fastify';
import type { BossLedger } from '../../../libs/db/boss';
import { createCollector, Collector } from '../../../libs/sandbox';
import { insertCaptures, InsertedCapture } from '../../support/capture-fixtures';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import { startCaptureWorker } from '../../support/worker-harness';
import { buildTestApp, call, OPS_TOKEN, startBoss } from './support';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let boss: BossLedger;
let app: FastifyInstance;
let collector: Collector;
let worker: ReturnType<typeof startCaptureWorker> | undefined;

beforeAll(async () => {
  db = await createMigratedDatabase('admin_write');
  boss = await startBoss(db.url);
  app = await buildTestApp(db.pool, boss, { bulkLimit: 3 });
  collector = createCollector();
  await collector.start();
});

afterEach(async () => {
  await worker?.stop({ timeoutMs: 2_000 });
  await worker?.boss.stop({ graceful: false, wait: true });
  worker = undefined;
  collector.setFaults(null);
});

afterAll(async () => {
  await app?.close();
  await boss?.stop({ graceful: false, wait: true });
  await collector?.stop();
  await db?.drop();
});

const startWorker = async () => {
  worker = startCaptureWorker({ url: db.url, pool: db.pool, captureUrl: collector.captureUrl, pollIntervalMs: 100 });
  await worker.start();
};
const rowOf = async (id: string | number) =>
  (
    await db.pool.query(
      `select c.state, c.attempts, c.max_attempts, c.failed_reason, j.state as job_state from relay.captures c left join tg_relay_boss.job j on j.id = c.job_id where c.id = $1`,
      [id],
    )
  ).rows[0];
const statesOf = async (ids: string[]) =>
  (await db.pool.query(`select state from relay.captures where id = any($1::bigint[]) order by id`, [ids])).rows.map(
    (r) => r.state,
  );

/** Captures that the worker tried once and failed for good (the collector answered 422). */
async function failedCaptures(n: number, chatId = 42): Promise<InsertedCapture[]> {
  collector.setFaults({ rejectRate: 1 });
  await startWorker();
  const list = await insertCaptures(
    db.pool,
    boss,
    Array.from({ length: n }, (_, i) => ({
      updateId: 900_000 + Math.floor(Math.random() * 1e6),
      chatId,
      messageId: i + 1,
      fromId: 7,
      text: `t${i}`,
      date: 1_700_000_000,
    })),
  );
  await waitFor(async () => (await statesOf(list.map((c) => c.id))).every((s) => s === 'failed'), {
    what: 'captures failed by the worker',
  });
  await worker!.stop({ timeoutMs: 2_000 });
  await worker!.boss.stop({ graceful: false, wait: true });
  worker = undefined;
  collector.setFaults(null);
  return list;
}

describe('retry one', () => {
  test('a failed capture goes back to pending with a renewed budget and a live job, the worker delivers it, the history shows both', async () => {
    const [c] = await failedCaptures(1);
    expect(await rowOf(c.id)).toMatchObject({ state: 'failed', attempts: 1, job_state: 'failed' });
    const res = await call(app, 'POST', `/v1/captures/${c.id}/retry`, {
      body: { reason: 'collector fixed' },
      headers: { authorization: `Bearer ${OPS_TOKEN}` },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ id: Number(c.id), state: 'pending' });
    expect(await rowOf(c.id)).toMatchObject({
      state: 'pending',
      attempts: 1,
      max_attempts: 13,
      failed_reason: null,
      job_state: 'created',
    });

    await startWorker();
    await waitFor(async () => (await rowOf(c.id)).state === 'delivered', { what: 'redelivered' });
    expect((await rowOf(c.id)).job_state).toBe('completed');
    const detail = (await call(app, 'GET', `/v1/captures/${c.id}`)).json();
    expect(
      detail.history.map((h: { outcome: string; attempt: number | null; actor: string | null }) => [
        h.outcome,
        h.attempt,
        h.actor,
      ]),
    ).toEqual([
      ['failed', 1, null],
      ['admin.retry', null, 'ops'],
      ['delivered', 2, null],
    ]);
    expect(detail.history[1].details).toMatchObject({ reason: 'collector fixed', kind: 'captures', result: 'ok' });
  });

  test('retrying something that is not failed is 409 and changes nothing; an unknown id is 404; both are audited', async () => {
    const [c] = await insertCaptures(db.pool, boss, 1); // pending, no worker running
    const res = await call(app, 'POST', `/v1/captures/${c.id}/retry`);
    expect(res.statusCode).toBe(409);
    expect(res.json()).toMatchObject({ code: 'RELAY_ADMIN_NOT_FAILED', state: 'pending' });
    expect((await rowOf(c.id)).state).toBe('pending');
    expect((await call(app, 'POST', '/v1/captures/987654321/retry')).statusCode).toBe(404);
    expect((await call(app, 'POST', '/v1/outbound/987654321/retry')).json().code).toBe('RELAY_ADMIN_NOT_FOUND');
    const audit = (await call(app, 'GET', '/v1/audit?action=retry&limit=3')).json().items;
    expect(audit.slice(0, 3).map((a: { error_code: string }) => a.error_code)).toEqual([
      'RELAY_ADMIN_NOT_FOUND',
      'RELAY_ADMIN_NOT_FOUND',
      'RELAY_ADMIN_NOT_FAILED',
    ]);
    expect(audit[2]).toMatchObject({ actor: 'admin', subject_id: Number(c.id), details: { result: 'refused' } });
  });
});

describe('bulk retry', () => {
  let failed: InsertedCapture[];
  beforeAll(async () => {
    failed = await failedCaptures(5, 777);
  });

  test('dry_run counts what one call would take and changes nothing', async () => {
    const res = await call(app, 'POST', '/v1/captures/retry', { body: { chat: '777', dry_run: true } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ dry_run: true, matched: 3, retried: 0, more: true }); // bulkLimit 3 in this app
    expect(res.json().ids).toEqual(failed.slice(0, 3).map((c) => Number(c.id)));
    expect(await statesOf(failed.map((c) => c.id))).toEqual(Array(5).fill('failed'));
  });

  test('is bounded per call: limit and the app bound, oldest first, "more" until done; each call audited with filter and ids', async () => {
    const first = (
      await call(app, 'POST', '/v1/captures/retry', {
        body: { chat: '777', state: 'failed', limit: 2, reason: 'replay' },
      })
    ).json();
    expect(first).toMatchObject({
      matched: 2,
      retried: 2,
      more: true,
      ids: failed.slice(0, 2).map((c) => Number(c.id)),
    });
    const second = (await call(app, 'POST', '/v1/captures/retry', { body: { chat: '777' } })).json();
    expect(second).toMatchObject({ retried: 3, more: false });
    const third = (await call(app, 'POST', '/v1/captures/retry', { body: { chat: '777' } })).json();
    expect(third).toMatchObject({ matched: 0, retried: 0, more: false });
    expect(await statesOf(failed.map((c) => c.id))).toEqual(Array(5).fill('pending'));
    const audit = (await db.pool.query(`select actor, details from relay.attempts where id = $1`, [first.audit_id]))
      .rows[0];
    expect(audit).toMatchObject({
      actor: 'admin',
      details: { filter: { chat: '777', state: 'failed' }, count: 2, ids: first.ids, reason: 'replay' },
    });
    // bulk-retried rows show the bulk action in their history
    const detail = (await call(app, 'GET', `/v1/captures/${failed[0].id}`)).json();
    expect(detail.history.map((h: { outcome: string }) => h.outcome)).toContain('admin.retry_bulk');
  });

  test('bad filters are 400: above the bound, unknown fields, other states', async () => {
    for (const [body, field] of [
      [{ limit: 4 }, 'body.limit'],
      [{ chats: '777' }, 'body.chats'],
      [{ state: 'pending' }, 'body.state'],
      [{ since: 'last week' }, 'body.since'],
      [{ dry_run: 'maybe' }, 'body.dry_run'],
    ] as const) {
      const res = await call(app, 'POST', '/v1/captures/retry', { body });
      expect([res.statusCode, res.json().field]).toEqual([400, field]);
    }
  });
});

describe('cancel', () => {
  test('a pending capture becomes failed "cancelled" and its job is cancelled; cancelling again is 409', async () => {
    const [c] = await insertCaptures(db.pool, boss, 1);
    const res = await call(app, 'POST', `/v1/captures/${c.id}/cancel`, { body: { reason: 'test data' } });
    expect(res.statusCode).toBe(200);
    expect(await rowOf(c.id)).toMatchObject({ state: 'failed', failed_reason: 'cancelled', job_state: 'cancelled' });
    const again = await call(app, 'POST', `/v1/captures/${c.id}/cancel`);
    expect([again.statusCode, again.json().code]).toEqual([409, 'RELAY_ADMIN_NOT_PENDING']);
    // a cancelled capture can be retried
    expect((await call(app, 'POST', `/v1/captures/${c.id}/retry`)).statusCode).toBe(200);
  });

  test('outbound: cancel a queued message', async () => {
    const msg = (
      await call(app, 'POST', '/v1/messages', { body: { msg_id: 'cancel-me', chat_id: 5, text: 'x', bot_id: '1' } })
    ).json();
    const res = await call(app, 'POST', `/v1/outbound/${msg.id}/cancel`);
    expect(res.json()).toMatchObject({ id: msg.id, state: 'failed' });
    const { rows } = await db.pool.query(
      `select o.failed_reason, j.state from relay.outbound o join tg_relay_boss.job j on j.id = o.job_id where o.id = $1`,
      [msg.id],
    );
    expect(rows[0]).toEqual({ failed_reason: 'cancelled', state: 'cancelled' });
    // and back: retry gives it a new job and a renewed budget
    expect((await call(app, 'POST', `/v1/outbound/${msg.id}/retry`)).json()).toMatchObject({ state: 'pending' });
    const after = await db.pool.query(
      `select o.state, o.max_attempts, j.state as job_state, j.name from relay.outbound o join tg_relay_boss.job j on j.id = o.job_id where o.id = $1`,
      [msg.id],
    );
    expect(after.rows[0]).toEqual({ state: 'pending', max_attempts: 12, job_state: 'created', name: 'outbound.send' });
  });

  test('inbox updates have no cancel route', async () => {
    expect((await call(app, 'POST', '/v1/inbox/1/cancel')).statusCode).toBe(404);
  });
});
