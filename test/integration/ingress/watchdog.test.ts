/**
 * The poller watchdog: a real `tg-relay poller` whose database path freezes mid-batch (no error,
 * no FIN: its commit never returns) while Telegram holds updates exits non-zero by itself after
 * 2 × POLL_TIMEOUT without progress, instead of sitting on the lease; restarted (as a supervisor
 * would), it stores the updates.
 */
import { Client } from 'pg';
import { createPool } from '../../../libs/db';
import type { BotApiSandbox } from '../../../libs/sandbox';
import { exited } from '../../support/cli';
import { createMigratedDatabase } from '../../support/db';
import { FreezableProxy, startFreezableProxy } from '../../support/freezable-proxy';
import { cursorOf, inboxCount, newBotToken, startSandbox, startTestPoller } from '../../support/ingress-harness';
import { killHard, ownedBy, PollerProcess, startPollerProcess } from '../../support/ingress-processes';
import { waitFor } from '../../support/wait-for';

jest.setTimeout(120_000);

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let sandbox: BotApiSandbox;
let proxy: FreezableProxy;
const procs: PollerProcess[] = [];

beforeAll(async () => {
  db = await createMigratedDatabase('wdog');
  sandbox = await startSandbox();
  proxy = await startFreezableProxy(db.url);
});
afterEach(async () => {
  for (const p of procs.splice(0)) await killHard(p);
});
afterAll(async () => {
  await proxy.stop();
  await sandbox.stop();
  await db.drop();
});

describe('poller watchdog', () => {
  it('a poller whose batch commit hangs on a frozen database connection while Telegram holds updates exits 75 on its own; restarted, it stores them', async () => {
    const { token, botId } = newBotToken();
    const env = { apiRoot: sandbox.url, token, leaseTtl: '5s', pollTimeout: '1s' };
    const stuck = startPollerProcess({ ...env, databaseUrl: proxy.url });
    procs.push(stuck);
    await waitFor(async () => ownedBy((await cursorOf(db.pool, botId))?.leaseOwner, stuck), {
      what: 'the poller owns the lease',
      timeoutMs: 60_000,
    });
    const before = (await cursorOf(db.pool, botId))!.nextOffset;

    // frozen while a long poll is open, so the poll answers the updates and the batch hangs (frozen
    // during an empty poll's progress write, the poller would never see them: no stall to detect)
    await waitFor(() => sandbox.botState(token).long_poll_open, {
      what: 'the poller inside a long poll',
      intervalMs: 1,
    });
    proxy.freeze();
    sandbox.injectMessages(token, 3, { chats: 1, chatBase: Number(botId) });

    const end = await Promise.race([exited(stuck), new Promise<null>((r) => setTimeout(() => r(null), 60_000))]);
    expect(end).toEqual({ code: 75, signal: null });
    expect(stuck.output()).toContain('poller watchdog');
    expect(stuck.output()).toContain('2 × POLL_TIMEOUT');
    expect(await inboxCount(db.pool, botId)).toBe(0);
    expect((await cursorOf(db.pool, botId))!.nextOffset).toBe(before);

    // the supervisor's restart (the database path works again)
    proxy.thaw();
    const restarted = startPollerProcess({ ...env, databaseUrl: db.url });
    procs.push(restarted);
    await waitFor(async () => (await inboxCount(db.pool, botId)) === 3, {
      what: 'the restarted poller stored the updates',
      timeoutMs: 60_000,
    });
    expect(ownedBy((await cursorOf(db.pool, botId))?.leaseOwner, restarted)).toBe(true);
  });

  it('in process: a batch stuck behind a lock (no lock limit) while Telegram holds updates ends the poller with `stalled`', async () => {
    const { token, botId } = newBotToken();
    const pool = createPool(db.url, { max: 2, timeouts: { lockMs: 0 } });
    const blocker = new Client({ connectionString: db.url });
    await blocker.connect();
    const p = startTestPoller({ pool, url: db.url, apiRoot: sandbox.url, token, botId, pollTimeoutMs: 500 });
    try {
      await waitFor(() => p.poller.status().state === 'polling', { what: 'owner' });
      await blocker.query('begin');
      await blocker.query('lock table relay.inbox in exclusive mode');
      sandbox.injectMessages(token, 2, { chats: 1, chatBase: Number(botId) });
      const exit = await p.poller.done;
      expect(exit).toMatchObject({ reason: 'stalled' });
      expect((exit as { message: string }).message).toContain('made no progress');
      expect(p.logs.lines().some((l) => l.level === 60 && /poller watchdog/.test(l.msg ?? ''))).toBe(true);
    } finally {
      await blocker.query('rollback').catch(() => undefined);
      await blocker.end();
      await p.stop();
      await pool.end();
    }
  });

  it('a database path silent for a few seconds with a short POLL_TIMEOUT is a backoff, not a stall (the window is at least 12 s)', async () => {
    const { token, botId } = newBotToken();
    const pool = createPool(proxy.url, { max: 3 });
    const p = startTestPoller({ pool, url: proxy.url, apiRoot: sandbox.url, token, botId, pollTimeoutMs: 1_000 });
    let ended: unknown = null;
    void p.poller.done.then((e) => (ended = e));
    try {
      await waitFor(() => p.poller.status().state === 'polling', { what: 'owner' });
      await waitFor(() => sandbox.botState(token).long_poll_open, { what: 'inside a long poll', intervalMs: 1 });
      proxy.freeze();
      sandbox.injectMessages(token, 2, { chats: 1, chatBase: Number(botId) });
      // 5 s without an answer: over twice the 2 × POLL_TIMEOUT window, under the floor
      await new Promise((r) => setTimeout(r, 5_000));
      expect(ended).toBeNull();
      proxy.thaw();
      await waitFor(async () => (await inboxCount(db.pool, botId)) === 2, { what: 'stored after the outage' });
      expect(ended).toBeNull();
      expect(p.poller.status().state).toBe('polling');
    } finally {
      proxy.thaw();
      await p.stop();
      await pool.end();
    }
  });

  it('does not trip while Telegram fails (5xx) or has nothing: that is a healthy backoff, not a stall', async () => {
    const { token, botId } = newBotToken();
    const p = startTestPoller({
      pool: db.pool,
      url: db.url,
      apiRoot: sandbox.url,
      token,
      botId,
      pollTimeoutMs: 500,
      watchdogMs: 1_000, // several windows pass during the failures below
    });
    let ended: unknown = null;
    void p.poller.done.then((e) => (ended = e));
    try {
      await waitFor(() => p.poller.status().state === 'polling', { what: 'owner' });
      sandbox.setFaults({ serverErrorRate: 1, methods: ['getUpdates'] }, token);
      const failedFrom = sandbox.calls(token, { method: 'getUpdates' }).length;
      // many failed polls, well over several 1 s watchdog windows (backoff is capped at 400 ms here)
      await waitFor(() => sandbox.calls(token, { method: 'getUpdates' }).length >= failedFrom + 10, {
        what: '10 failed polls',
        timeoutMs: 30_000,
      });
      sandbox.setFaults(null, token);
      const emptyFrom = sandbox.calls(token, { method: 'getUpdates' }).length;
      await waitFor(() => sandbox.calls(token, { method: 'getUpdates' }).length >= emptyFrom + 5, {
        what: '5 empty polls',
        timeoutMs: 30_000,
      });
      expect(ended).toBeNull();
      sandbox.injectMessages(token, 2, { chats: 1, chatBase: Number(botId) });
      await waitFor(async () => (await inboxCount(db.pool, botId)) === 2, { what: 'stored after the failures' });
      expect(ended).toBeNull();
      expect(p.poller.status().state).toBe('polling');
    } finally {
      sandbox.setFaults(null, token);
      await p.stop();
    }
  });
});
