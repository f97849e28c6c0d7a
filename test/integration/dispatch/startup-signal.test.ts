/**
 * SIGTERM to a worker that is still starting (reported from a short soak: a worker just restarted,
 * getMe answering 502, needed SIGKILL after the final SIGTERM). Real processes through
 * scripts/tg-relay-dev.js, the real Bot API sandbox, real PostgreSQL.
 * - During startup (config, database, handlers module), before "worker started": the signal
 *   handlers used to be installed only after startup, so the process died by the signal (no drain,
 *   no exit 0). Now the shutdown handler is installed first and waits for the startup to finish.
 * - After "worker started" while getMe keeps failing and work is announced (NOTIFY): the worker must
 *   stay responsive (getMe retried) and drain on SIGTERM (a guard: the dispatch claim answers an
 *   empty batch without I/O while the bot is not ready, which must never make the claim loop spin).
 */
import { createBotApiSandbox, type BotApiSandbox } from '../../../libs/sandbox';
import { exited } from '../../support/cli';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import { killWorker, startWorkerProcess, workerStarted, type WorkerProcess } from '../../support/worker-process';
import { inboxRows, storeUpdates, TOKEN } from './helpers';
import { createBoss } from '../../../libs/db';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let sandbox: BotApiSandbox;
const children: WorkerProcess[] = [];

beforeAll(async () => {
  db = await createMigratedDatabase('dsp_startsig');
  sandbox = createBotApiSandbox({ limits: { enabled: false } });
  await sandbox.start();
});
afterEach(async () => {
  await Promise.all(children.splice(0).map(killWorker));
});
afterAll(async () => {
  await sandbox?.stop();
  await db?.drop();
});

jest.setTimeout(90_000);

const within = <T>(p: Promise<T>, ms: number) =>
  Promise.race([p, new Promise<'still running'>((r) => setTimeout(() => r('still running'), ms))]);

it('SIGTERM during startup (handlers module still loading): the worker finishes starting, drains and exits 0', async () => {
  const w = startWorkerProcess({
    DATABASE_URL: db.url,
    TELEGRAM_BOT_TOKEN: TOKEN,
    TELEGRAM_API_ROOT: sandbox.url,
    BOT_HANDLERS: 'test/fixtures/slow-start-bot.ts',
    SLOW_START_MS: '4000',
  });
  children.push(w);
  await waitFor(() => w.output().includes('slow-start-bot: installing'), {
    what: 'handlers module installing',
    timeoutMs: 30_000,
  });
  expect(w.output()).not.toContain('worker started');
  w.kill('SIGTERM');
  expect(await within(exited(w), 40_000)).toEqual({ code: 0, signal: null });
  expect(w.output()).toContain('shutting down: draining');
  expect(w.output()).toContain('shutdown complete');
});

it('SIGTERM while getMe keeps failing and updates wait: the worker drains and exits 0; once getMe answers, the updates are handled', async () => {
  sandbox.setFaults({ serverErrorRate: 1, serverErrorStatus: 502, methods: ['getMe'] });
  const env = {
    DATABASE_URL: db.url,
    TELEGRAM_BOT_TOKEN: TOKEN,
    TELEGRAM_API_ROOT: sandbox.url,
    BOT_HANDLERS: 'examples/echo-bot.ts',
    REPLY_MODE: 'outbound',
  };
  const w = startWorkerProcess(env);
  children.push(w);
  await workerStarted(w);
  await waitFor(() => w.output().includes('getMe failed; dispatch waits for the Bot API'), { what: 'getMe refused' });

  // work is announced (the poller's transaction NOTIFYs) while the bot is not ready
  const boss = createBoss(db.url, { max: 1 });
  await storeUpdates(db.pool, boss, [sandbox.injectMessage(TOKEN, { chatId: 91, text: 'waiting for getMe' })]);
  // the worker keeps living: getMe is retried (a starved event loop would never retry it)
  const calls = () => sandbox.calls(TOKEN, { method: 'getMe' }).length;
  const before = calls();
  await waitFor(() => calls() > before, { what: 'getMe retried after the wake-up', timeoutMs: 30_000 });

  w.kill('SIGTERM');
  expect(await within(exited(w), 30_000)).toEqual({ code: 0, signal: null });
  expect(w.output()).toContain('shutting down: draining');
  expect((await inboxRows(db.pool)).map((r) => r.state)).toEqual(['pending']);

  // the Bot API answers again: a new worker handles the update
  sandbox.setFaults(null);
  const w2 = startWorkerProcess(env);
  children.push(w2);
  await workerStarted(w2);
  await waitFor(async () => (await inboxRows(db.pool)).every((r) => r.state === 'handled'), {
    what: 'update handled',
    timeoutMs: 30_000,
  });
  w2.kill('SIGTERM');
  expect(await exited(w2)).toEqual({ code: 0, signal: null });
});
