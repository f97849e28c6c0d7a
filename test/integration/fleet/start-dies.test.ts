/**
 * `tg-relay start` runs poller, worker and admin API in one process: when one of them dies the
 * process exits non-zero (so its supervisor restarts a whole relay) instead of running half-alive.
 * Here the poller dies for real: its database path freezes mid-batch while Telegram holds updates,
 * its watchdog ends it, and start exits 75 with the reason.
 */
import { loadConfig } from '../../../libs/config';
import { startAdminRuntime } from '../../../libs/runtime/admin';
import { createCollector, type BotApiSandbox } from '../../../libs/sandbox';
import { testLogger } from '../../support/worker-harness';
import { exited, startCli } from '../../support/cli';
import { createMigratedDatabase } from '../../support/db';
import { FreezableProxy, startFreezableProxy } from '../../support/freezable-proxy';
import { cursorOf, newBotToken, startSandbox } from '../../support/ingress-harness';
import { waitFor } from '../../support/wait-for';

jest.setTimeout(150_000);

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let sandbox: BotApiSandbox;
let proxy: FreezableProxy;
const procs: ReturnType<typeof startCli>[] = [];

beforeAll(async () => {
  db = await createMigratedDatabase('startdie');
  sandbox = await startSandbox();
  proxy = await startFreezableProxy(db.url);
});
afterAll(async () => {
  for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  await proxy.stop();
  await sandbox.stop();
  await db.drop();
});

describe('tg-relay start supervises its components', () => {
  it('exits non-zero (75) when its poller dies, instead of running on with worker and admin API only', async () => {
    const { token, botId } = newBotToken();
    const proc = startCli(['start'], {
      DATABASE_URL: proxy.url,
      TELEGRAM_BOT_TOKEN: token,
      TELEGRAM_API_ROOT: sandbox.url,
      ADMIN_PORT: '0',
      POLL_TIMEOUT: '1s',
      LEASE_TTL: '5s',
      SHUTDOWN_TIMEOUT: '2s',
      LOG_LEVEL: 'warn',
    });
    procs.push(proc);
    await waitFor(() => /Ctrl-C stops everything/.test(proc.output()), { timeoutMs: 90_000, what: 'the start banner' });
    await waitFor(async () => (await cursorOf(db.pool, botId))?.leaseOwner?.split('/')[1] === String(proc.pid), {
      timeoutMs: 30_000,
      what: 'start owns the lease',
    });

    // Freeze while the poller holds a long poll open (not while it writes an empty poll's progress:
    // frozen there, it never sees the updates, which is a standby's wait for its database, not this
    // stall), then give Telegram updates: the poll answers them and the batch hangs mid-transaction.
    await waitFor(() => sandbox.botState(token).long_poll_open, {
      what: 'the poller inside a long poll',
      intervalMs: 1,
    });
    proxy.freeze();
    sandbox.injectMessages(token, 2, { chats: 1, chatBase: Number(botId) });

    const end = await Promise.race([exited(proc), new Promise<null>((r) => setTimeout(() => r(null), 90_000))]);
    expect(end).toEqual({ code: 75, signal: null });
    expect(proc.output()).toContain('tg-relay start: the poller stopped');
    expect(proc.output()).toContain('poller watchdog');
    proxy.thaw();
  });

  it('exits 70 when its sandbox dies (sandbox mode: the stand-in for Telegram runs in the process)', async () => {
    const proc = startCli(['start'], {
      DATABASE_URL: db.url,
      ADMIN_PORT: '0',
      SANDBOX_PORT: '0',
      SANDBOX_COLLECTOR_PORT: '0',
      POLL_TIMEOUT: '1s',
      SHUTDOWN_TIMEOUT: '2s',
      LOG_LEVEL: 'warn',
    });
    procs.push(proc);
    const url = await waitFor(() => /SANDBOX_URL=(http:\/\/\S+) /.exec(proc.output())?.[1], {
      timeoutMs: 90_000,
      what: 'the sandbox banner',
    });
    const crash = await fetch(`${url}/sandbox/crash`, { method: 'POST' });
    expect(await crash.json()).toEqual({ ok: true, result: true });

    const end = await Promise.race([exited(proc), new Promise<null>((r) => setTimeout(() => r(null), 60_000).unref())]);
    expect(end).toEqual({ code: 70, signal: null });
    expect(proc.output()).toContain(
      'tg-relay start: the sandbox stopped (the Bot API sandbox server was crashed on request)',
    );
  });

  it("the sandbox collector reports its server's death the same way", async () => {
    const collector = createCollector({});
    const url = await collector.start();
    const crash = await fetch(`${url}/sandbox/crash`, { method: 'POST' });
    expect(await crash.json()).toEqual({ ok: true, result: true });
    await expect(collector.died).resolves.toBe('the sandbox collector server was crashed on request');
    await expect(fetch(`${url}/sandbox/health`)).rejects.toThrow();
    await collector.stop(); // closed already: a no-op
  });

  it("the admin runtime reports its server's death (start races it with the poller's and the worker's)", async () => {
    const config = loadConfig({ DATABASE_URL: db.url, ADMIN_PORT: '0' });
    const admin = await startAdminRuntime({ config, databaseUrl: db.url, logger: testLogger() });
    try {
      const ok = await fetch(`${admin.address}/health/live`);
      expect(ok.status).toBeLessThan(500);
      admin.app.server.close();
      admin.app.server.closeAllConnections();
      await expect(admin.died).resolves.toBe('the admin API server closed');
    } finally {
      await admin.stop();
    }
  });
});
