/**
 * Graceful shutdown of real `tg-relay` processes: on SIGTERM/SIGINT a process stops taking
 * work, finishes what is in flight within SHUTDOWN_TIMEOUT or gives it back, releases what it holds,
 * closes its pools and exits 0; a second signal forces exit 1.
 *
 * Covered elsewhere, not repeated here: capture delivery drain and release
 * (test/integration/captures/graceful-stop.test.ts) and the poller's SIGTERM with a short lease
 * (test/integration/ingress/processes.test.ts). Here: update dispatch and outbound sends in flight,
 * the second signal, the admin API, and a poller's SIGINT with a lease long enough to tell a release
 * from an expiry.
 */
import { freePort } from '../../../libs/db';
import { createBotApiSandbox, createCollector, type BotApiSandbox, type Collector } from '../../../libs/sandbox';
import { exited, startCli } from '../../support/cli';
import { insertCaptures, countByState } from '../../support/capture-fixtures';
import { createMigratedDatabase } from '../../support/db';
import { hasLog, ownedBy, startPollerProcess, type PollerProcess } from '../../support/ingress-processes';
import { cursorOf } from '../../support/ingress-harness';
import { waitFor } from '../../support/wait-for';
import { killWorker, startWorkerProcess, workerStarted, type WorkerProcess } from '../../support/worker-process';
import { inboxRows, makeUpdate, storeUpdates } from '../dispatch/helpers';
import { createBoss } from '../../../libs/db';

jest.setTimeout(90_000);

const TOKEN = '6161000001:shutdown-test-token';
const BOT_ID = '6161000001';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let sb: BotApiSandbox;
let collector: Collector;
const procs: WorkerProcess[] = [];

beforeAll(async () => {
  db = await createMigratedDatabase('fleet_stop');
  await db.pool.query(
    `create table handler_runs (seq bigserial primary key, chat_id bigint, update_id bigint not null, ok boolean not null, pid integer not null, at timestamptz not null default clock_timestamp())`,
  );
  sb = createBotApiSandbox({ seed: 8 });
  await sb.start();
  collector = createCollector({ seed: 8 });
  await collector.start();
});

afterEach(async () => {
  await Promise.all(procs.splice(0).map((p) => killWorker(p)));
  sb.setFaults(null);
  sb.setFaults(null, TOKEN);
  collector.setFaults(null);
  await db.pool.query(
    'truncate relay.inbox, relay.outbound_uploads, relay.outbound, relay.captures, relay.attempts, relay.outbound_chat_rate, relay.outbound_bot_rate, handler_runs',
  );
});

afterAll(async () => {
  await sb.stop();
  await collector.stop();
  await db.drop();
});

function worker(env: Record<string, string | undefined>): WorkerProcess {
  const p = startWorkerProcess({ DATABASE_URL: db.url, TELEGRAM_BOT_TOKEN: TOKEN, TELEGRAM_API_ROOT: sb.url, ...env });
  procs.push(p);
  return p;
}

/** A worker that dispatches with the recording bot (every run lands in handler_runs). */
function dispatchWorker(env: Record<string, string | undefined>): WorkerProcess {
  return worker({ BOT_HANDLERS: 'test/fixtures/recording-bot.ts', RECORDING_DB_URL: db.url, ...env });
}

async function timed<T>(p: Promise<T>): Promise<{ value: T; ms: number }> {
  const t = Date.now();
  const value = await p;
  return { value, ms: Date.now() - t };
}

async function outboundRows() {
  const { rows } = await db.pool.query(
    `select o.msg_id, o.state, o.attempts, o.claim_id, o.failed_reason, o.telegram_message_id, j.state::text as job_state
       from relay.outbound o left join tg_relay_boss.job j on j.id = o.job_id and j.name = 'outbound.send' order by o.id`,
  );
  return Object.fromEntries(rows.map((r) => [r.msg_id, r]));
}

async function enqueue(msgId: string, chatId: number, delivery = 'at_least_once'): Promise<void> {
  await db.pool.query(`select * from relay.enqueue_outbound($1, $2, $3, delivery => $4, bot_id => $5)`, [
    msgId,
    String(chatId),
    `text of ${msgId}`,
    delivery,
    BOT_ID,
  ]);
}

async function auditOf(subject: string, key: string) {
  const { rows } = await db.pool.query(
    `select outcome, error_code from relay.attempts where subject = $1 and subject_key = $2 order by id`,
    [subject, key],
  );
  return rows.map((r) => [r.outcome, r.error_code]);
}

describe('tg-relay worker, update dispatch in flight', () => {
  it('SIGTERM: running handlers finish and are acknowledged, nothing new is claimed, exit 0', async () => {
    const boss = createBoss(db.url, { max: 1 });
    // three chat heads, each with a follower that may only run after its head was handled
    await storeUpdates(
      db.pool,
      boss,
      [
        makeUpdate(1, 101),
        makeUpdate(2, 102),
        makeUpdate(3, 103),
        makeUpdate(4, 101),
        makeUpdate(5, 102),
        makeUpdate(6, 103),
      ],
      BOT_ID,
    );
    const w = dispatchWorker({ RECORDING_HANG_MS: '1500', SHUTDOWN_TIMEOUT: '20s', WORKER_CONCURRENCY: '8' });
    await workerStarted(w);
    await waitFor(async () => (await inboxRows(db.pool)).filter((r) => r.claim_id).length === 3, {
      what: 'the three heads in flight',
    });

    w.kill('SIGTERM');
    const { value: exit, ms } = await timed(exited(w));
    expect(exit).toEqual({ code: 0, signal: null });
    expect(ms).toBeLessThan(15_000);
    const rows = await inboxRows(db.pool);
    expect(rows.map((r) => [r.update_id, r.state, r.attempts, r.claim_id, r.job_state])).toEqual([
      ['1', 'handled', 1, null, 'completed'],
      ['2', 'handled', 1, null, 'completed'],
      ['3', 'handled', 1, null, 'completed'],
      ['4', 'pending', 0, null, 'created'],
      ['5', 'pending', 0, null, 'created'],
      ['6', 'pending', 0, null, 'created'],
    ]);
    const runs = await db.pool.query('select update_id::int as u from handler_runs order by update_id');
    expect(runs.rows.map((r) => r.u)).toEqual([1, 2, 3]);
    expect(w.output()).toContain('shutdown complete');
    await boss.stop({ graceful: false, wait: true }).catch(() => undefined);
  });

  it('past SHUTDOWN_TIMEOUT a handler still running is aborted and its update given back: pending, not counted, exit 0', async () => {
    const boss = createBoss(db.url, { max: 1 });
    await storeUpdates(db.pool, boss, [makeUpdate(11, 111, 'slow a'), makeUpdate(12, 112, 'slow b')], BOT_ID);
    const w = dispatchWorker({ SHUTDOWN_TIMEOUT: '500ms', HANDLER_TIMEOUT: '60s' });
    await workerStarted(w);
    await waitFor(async () => (await inboxRows(db.pool)).filter((r) => r.claim_id).length === 2, {
      what: 'both in flight',
    });

    w.kill('SIGTERM');
    const { value: exit, ms } = await timed(exited(w));
    expect(exit).toEqual({ code: 0, signal: null });
    expect(ms).toBeLessThan(8_000);
    const rows = await inboxRows(db.pool);
    expect(rows.map((r) => [r.update_id, r.state, r.attempts, r.claim_id, r.job_state])).toEqual([
      ['11', 'pending', 0, null, 'retry'],
      ['12', 'pending', 0, null, 'retry'],
    ]);
    expect(await auditOf('inbox', '11')).toEqual([['retry', 'RELAY_RELEASED']]);
    await boss.stop({ graceful: false, wait: true }).catch(() => undefined);
  });
});

describe('tg-relay worker, outbound sends in flight', () => {
  it("SIGTERM: sends on the wire finish and are recorded delivered; the chats' next messages stay pending; exit 0", async () => {
    sb.setFaults({ latencyMs: 1_500, methods: ['sendMessage'] }, TOKEN);
    for (const chat of [201, 202, 203]) await enqueue(`first-${chat}`, chat);
    for (const chat of [201, 202, 203]) await enqueue(`second-${chat}`, chat);
    const w = worker({ SHUTDOWN_TIMEOUT: '20s', OUTBOUND_SEND_TIMEOUT: '10s' });
    await workerStarted(w);
    await waitFor(
      async () =>
        Object.values(await outboundRows()).filter((r) => (r as { state: string }).state === 'delivering').length === 3,
      {
        what: 'three sends in flight',
      },
    );

    w.kill('SIGTERM');
    const { value: exit, ms } = await timed(exited(w));
    expect(exit).toEqual({ code: 0, signal: null });
    expect(ms).toBeLessThan(15_000);
    const rows = await outboundRows();
    for (const chat of [201, 202, 203]) {
      expect(rows[`first-${chat}`]).toMatchObject({ state: 'delivered', attempts: 1, job_state: 'completed' });
      expect(rows[`first-${chat}`].telegram_message_id).not.toBeNull();
      expect(rows[`second-${chat}`]).toMatchObject({
        state: 'pending',
        attempts: 0,
        claim_id: null,
        job_state: 'created',
      });
    }
    expect(
      sb
        .sent(TOKEN)
        .map((s) => s.text)
        .sort(),
    ).toEqual(['text of first-201', 'text of first-202', 'text of first-203']);
  });

  it('past SHUTDOWN_TIMEOUT: at-least-once sends are given back, an at-most-once send on the wire is left for stale recovery to fail as ambiguous', async () => {
    sb.setFaults({ latencyMs: 30_000, methods: ['sendMessage'] }, TOKEN);
    await enqueue('alo-1', 301);
    await enqueue('alo-2', 302);
    await enqueue('amo-1', 303, 'at_most_once');
    const w = worker({ SHUTDOWN_TIMEOUT: '500ms', OUTBOUND_SEND_TIMEOUT: '60s' });
    await workerStarted(w);
    await waitFor(
      async () =>
        Object.values(await outboundRows()).filter((r) => (r as { state: string }).state === 'delivering').length === 3,
      {
        what: 'three sends in flight',
      },
    );
    await waitFor(() => sb.calls(TOKEN, { method: 'sendMessage' }).length === 3, {
      what: 'the three requests reached the Bot API',
    });

    w.kill('SIGTERM');
    const { value: exit, ms } = await timed(exited(w));
    expect(exit).toEqual({ code: 0, signal: null });
    expect(ms).toBeLessThan(8_000);
    let rows = await outboundRows();
    expect(rows['alo-1']).toMatchObject({ state: 'pending', attempts: 0, claim_id: null, job_state: 'retry' });
    expect(rows['alo-2']).toMatchObject({ state: 'pending', attempts: 0, claim_id: null, job_state: 'retry' });
    expect(rows['amo-1']).toMatchObject({ state: 'delivering', attempts: 1 });
    expect(await auditOf('outbound', 'alo-1')).toEqual([['retry', 'RELAY_RELEASED']]);

    // the next worker delivers what was given back and, once the claim is stale, fails the at-most-once one
    sb.setFaults(null, TOKEN);
    const next = worker({ STALE_AFTER: '2s' });
    await workerStarted(next);
    await waitFor(
      async () => {
        rows = await outboundRows();
        return (
          rows['alo-1'].state === 'delivered' && rows['alo-2'].state === 'delivered' && rows['amo-1'].state === 'failed'
        );
      },
      { what: 'given-back sends delivered, the at-most-once one failed', timeoutMs: 30_000 },
    );
    expect(rows['amo-1'].failed_reason).toBe('ambiguous');
  });
});

describe('a second signal forces exit', () => {
  it('SIGTERM twice: a worker waiting for a handler that will not finish exits 1 at once; another worker recovers the update', async () => {
    const boss = createBoss(db.url, { max: 1 });
    await storeUpdates(db.pool, boss, [makeUpdate(21, 121)], BOT_ID);
    const w = dispatchWorker({ RECORDING_HANG_MS: '60000', SHUTDOWN_TIMEOUT: '60s', HANDLER_TIMEOUT: '60s' });
    await workerStarted(w);
    await waitFor(async () => (await inboxRows(db.pool))[0]?.claim_id, { what: 'in flight' });

    w.kill('SIGTERM');
    await waitFor(() => /shutting down: draining/.test(w.output()), { what: 'draining' });
    await new Promise((r) => setTimeout(r, 300));
    expect(w.exitCode).toBeNull(); // still waiting for the handler
    w.kill('SIGTERM');
    const { value: exit, ms } = await timed(exited(w));
    expect(exit).toEqual({ code: 1, signal: null });
    expect(ms).toBeLessThan(3_000);
    expect(w.output()).toContain('second signal: forcing exit');
    expect((await inboxRows(db.pool))[0]).toMatchObject({ state: 'pending', attempts: 1 }); // still claimed: nothing was released

    const next = dispatchWorker({ STALE_AFTER: '2s' });
    await workerStarted(next);
    await waitFor(async () => (await inboxRows(db.pool))[0]?.state === 'handled', {
      what: 'recovered and handled',
      timeoutMs: 30_000,
    });
    expect((await auditOf('inbox', '21')).map((a) => a[1])).toEqual(['RELAY_STALE_CLAIM', null]);
    await boss.stop({ graceful: false, wait: true }).catch(() => undefined);
  });

  it('SIGINT twice: a worker waiting for a collector that never answers exits 1 at once, the capture left to stale recovery', async () => {
    collector.setFaults({ timeoutRate: 1, timeoutMs: 0 });
    const boss = createBoss(db.url, { max: 1 });
    await insertCaptures(db.pool, boss, 1);
    const w = worker({ CAPTURE_URL: collector.captureUrl, CAPTURE_TIMEOUT: '60s', SHUTDOWN_TIMEOUT: '60s' });
    await workerStarted(w);
    await waitFor(async () => (await countByState(db.pool)).delivering === 1, { what: 'in flight' });

    w.kill('SIGINT');
    await waitFor(() => /shutting down: draining/.test(w.output()), { what: 'draining' });
    w.kill('SIGINT');
    const { value: exit, ms } = await timed(exited(w));
    expect(exit).toEqual({ code: 1, signal: null });
    expect(ms).toBeLessThan(3_000);
    expect(await countByState(db.pool)).toEqual({ delivering: 1 });
    await boss.stop({ graceful: false, wait: true }).catch(() => undefined);
  });
});

describe('tg-relay admin', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)('%s: stops listening, closes its pools and exits 0', async (signal) => {
    const port = await freePort();
    const token = 'shutdown-admin-token-0123456789';
    const admin = startCli(['admin'], {
      DATABASE_URL: db.url,
      ADMIN_TOKEN: token,
      ADMIN_PORT: String(port),
      LOG_LEVEL: 'info',
      SHUTDOWN_TIMEOUT: '5s',
    });
    procs.push(admin);
    const base = `http://127.0.0.1:${port}`;
    await waitFor(async () => (await fetch(`${base}/health/live`)).ok, { what: 'admin up', timeoutMs: 30_000 });
    const stats = await fetch(`${base}/v1/stats`, { headers: { authorization: `Bearer ${token}` } });
    expect(stats.status).toBe(200);
    const pid = admin.pid!;
    const backends = async () =>
      (
        await db.pool.query(
          `select count(*)::int as n from pg_stat_activity where datname = current_database() and application_name like 'tg-relay:admin%'`,
        )
      ).rows[0].n as number;
    expect(await backends()).toBeGreaterThan(0);

    admin.kill(signal);
    const { value: exit, ms } = await timed(exited(admin));
    expect(exit).toEqual({ code: 0, signal: null });
    expect(ms).toBeLessThan(10_000);
    expect(admin.output()).toContain('shutdown complete');
    await expect(fetch(`${base}/health/live`)).rejects.toThrow();
    await waitFor(async () => (await backends()) === 0, { what: `no database session of admin ${pid} left` });
  });
});

describe('tg-relay poller', () => {
  it('SIGINT: the lease is released and a standby takes over long before it would have expired; exit 0', async () => {
    const ttlMs = 20_000;
    const token = '6161000002:shutdown-poller-token';
    const botId = '6161000002';
    const env = { databaseUrl: db.url, apiRoot: sb.url, token, leaseTtl: `${ttlMs}ms`, pollTimeout: '1s' };
    const a: PollerProcess = startPollerProcess(env);
    procs.push(a);
    await waitFor(async () => ownedBy((await cursorOf(db.pool, botId))?.leaseOwner, a), {
      what: 'A owns the lease',
      timeoutMs: 30_000,
    });
    const b: PollerProcess = startPollerProcess(env);
    procs.push(b);
    await waitFor(() => hasLog(b, /ingress starting/), { what: 'B up as standby', timeoutMs: 30_000 });
    await new Promise((r) => setTimeout(r, 500));
    expect(ownedBy((await cursorOf(db.pool, botId))?.leaseOwner, a)).toBe(true);
    const expiresInMs = (
      await db.pool.query(
        `select extract(epoch from lease_expires_at - now()) * 1000 as ms from relay.cursor where bot_id = $1`,
        [botId],
      )
    ).rows[0].ms;

    const t = Date.now();
    a.kill('SIGINT');
    expect(await exited(a)).toEqual({ code: 0, signal: null });
    expect(hasLog(a, 'ingress lease released')).toBe(true);
    await waitFor(async () => ownedBy((await cursorOf(db.pool, botId))?.leaseOwner, b), {
      what: 'B took over',
      timeoutMs: ttlMs + 5_000,
      intervalMs: 20,
    });
    const takeoverMs = Date.now() - t;
    // A standby re-reads a held lease every second (STANDBY_RECHECK_MS), so a released lease is taken
    // within about that (5 s: scheduling slack on a loaded machine) — not TTL/2 = 10 s later, and long
    // before the lease A held would have expired.
    expect(takeoverMs).toBeLessThan(Math.min(Number(expiresInMs), 5_000));
    const sent = sb.injectMessage(token, { chatId: 9, text: 'after the takeover' });
    await waitFor(
      async () =>
        (await db.pool.query('select 1 from relay.inbox where bot_id = $1 and update_id = $2', [botId, sent.update_id]))
          .rowCount === 1,
      {
        what: 'B polls',
      },
    );
    b.kill('SIGTERM');
    expect(await exited(b)).toEqual({ code: 0, signal: null });
  });
});
