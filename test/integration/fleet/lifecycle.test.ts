/**
 * How a process ends when it was not asked to: a worker whose claim loop died exits 70 instead of
 * running on without that queue, and its readiness names the dead loop; a SIGTERM that arrives while
 * the CLI is still loading drains (exit 0) instead of killing the process.
 */
import { loadConfig } from '../../../libs/config';
import { WakeSignal } from '../../../libs/queue/signal';
import { startWorkerRuntime } from '../../../libs/runtime/worker';
import { exited, startCli } from '../../support/cli';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import { testLogger } from '../../support/worker-harness';

jest.setTimeout(90_000);

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
const procs: Array<{ kill(s: NodeJS.Signals): unknown; exitCode: number | null; signalCode: string | null }> = [];

beforeAll(async () => {
  db = await createMigratedDatabase('lifecycle');
});
afterAll(async () => {
  for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  await db.drop();
});

const workerEnv = () => ({
  DATABASE_URL: db.url,
  // no collector needs to answer: the loop dies before it claims anything
  CAPTURE_URL: 'http://127.0.0.1:9/capture',
  SHUTDOWN_TIMEOUT: '2s',
  LOG_LEVEL: 'info',
});

describe('a worker whose claim loop died', () => {
  it('tg-relay worker exits 70 and says which loop died and why', async () => {
    const child = startCli(['worker'], workerEnv(), { preload: 'test/fixtures/crash-claim-loop.js' });
    procs.push(child);
    const end = await Promise.race([
      exited(child),
      new Promise<null>((r) => setTimeout(() => r(null), 60_000).unref()),
    ]);
    expect(end).toEqual({ code: 70, signal: null });
    const out = child.output();
    expect(out).toContain('tg-relay worker: the capture.deliver claim loop crashed: injected claim loop fault');
    expect(out).toContain('a claim loop died: tg-relay worker exits');
  });

  it('its readiness is red and names the dead loop, also while it drains on its way out', async () => {
    const wait = jest.spyOn(WakeSignal.prototype, 'wait').mockImplementation(() => {
      throw new Error('injected claim loop fault');
    });
    const config = loadConfig(workerEnv());
    const worker = await startWorkerRuntime({ config, databaseUrl: db.url, logger: testLogger() });
    try {
      await expect(worker.died).resolves.toBe('the capture.deliver claim loop crashed: injected claim loop fault');
      const check = await worker.ready();
      expect(check.ready).toBe(false);
      expect(check.reasons).toContain('the capture.deliver claim loop is not running');
      const stopping = worker.stop(1000);
      expect(await worker.ready()).toMatchObject({
        ready: false,
        reasons: ['the capture.deliver claim loop crashed: injected claim loop fault'],
      });
      await stopping;
    } finally {
      wait.mockRestore();
      await worker.stop(1000);
    }
  });
});

/** A CLI process whose module loading is slowed (test/fixtures/slow-cli-load.js). */
function startSlowLoading(args: string[], env: Record<string, string>) {
  const child = startCli(args, env, { preload: 'test/fixtures/slow-cli-load.js' });
  procs.push(child);
  return child;
}

/** SIGTERM (`times` times) while `child` is still loading its command. */
async function signalWhileLoading(child: ReturnType<typeof startSlowLoading>, times = 1): Promise<void> {
  await waitFor(() => child.output().includes('<<loading the cli>>'), { what: 'the CLI loading', intervalMs: 1 });
  for (let i = 0; i < times; i++) {
    if (i > 0) await new Promise((r) => setTimeout(r, 100)); // two signals at once may reach it as one
    child.kill('SIGTERM');
  }
}

const exitOf = (child: ReturnType<typeof startSlowLoading>) =>
  Promise.race([exited(child), new Promise<null>((r) => setTimeout(() => r(null), 60_000).unref())]);

describe('a signal while the process is still starting', () => {
  it('SIGTERM during startup: the worker finishes starting, drains and exits 0', async () => {
    const child = startSlowLoading(['worker'], workerEnv());
    await signalWhileLoading(child);
    expect(await exitOf(child)).toEqual({ code: 0, signal: null });
    expect(child.output()).toContain('shutting down: draining');
    expect(child.output()).toContain('shutdown complete');
  });

  it('two signals during startup: exit 1 at once, as a second signal does while draining', async () => {
    const child = startSlowLoading(['worker'], workerEnv());
    await signalWhileLoading(child, 2);
    expect(await exitOf(child)).toEqual({ code: 1, signal: null });
    expect(child.output()).not.toContain('worker started');
  });

  it('a command that does not drain gets the held signal back: it ends by it instead of ignoring it', async () => {
    // `tg-relay sandbox` runs until a signal; a signal swallowed while it loaded would keep it running
    const child = startSlowLoading(['sandbox'], { SANDBOX_PORT: '0', SANDBOX_COLLECTOR_PORT: '0' });
    await signalWhileLoading(child);
    expect(await exitOf(child)).toEqual({ code: null, signal: 'SIGTERM' });
    expect(child.output()).not.toContain('Inject a user message');
  });
});
