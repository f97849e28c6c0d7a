/**
 * `tg-relay start` runs the poller and the worker in one process, and their commits wake each other
 * there directly: a committed batch wakes the dispatch claim, a handled update the outbound claim.
 * Without LISTEN (DB_POOL_MODE=transaction) and with the safety poll at its 60 s maximum, nothing
 * but those in-process wakes can make each reply arrive well within that minute.
 */
import type { BotApiSandbox } from '../../../libs/sandbox';
import { exited, startCli } from '../../support/cli';
import { createMigratedDatabase } from '../../support/db';
import { newBotToken, startSandbox } from '../../support/ingress-harness';
import { waitFor } from '../../support/wait-for';

jest.setTimeout(150_000);

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let sandbox: BotApiSandbox;
let proc: ReturnType<typeof startCli> | undefined;

beforeAll(async () => {
  db = await createMigratedDatabase('localwake');
  sandbox = await startSandbox();
});
afterAll(async () => {
  if (proc && proc.exitCode === null && proc.signalCode === null) {
    proc.kill('SIGTERM');
    await exited(proc);
  }
  await sandbox.stop();
  await db.drop();
});

it('replies without LISTEN and long before the 60 s safety poll when poller and worker share a process', async () => {
  const { token } = newBotToken();
  proc = startCli(['start'], {
    DATABASE_URL: db.url,
    DATABASE_DIRECT_URL: db.url,
    DB_POOL_MODE: 'transaction',
    WORK_POLL_INTERVAL: '60s',
    TELEGRAM_BOT_TOKEN: token,
    TELEGRAM_API_ROOT: sandbox.url,
    BOT_HANDLERS: 'examples/echo-bot.ts',
    REPLY_MODE: 'outbound',
    ADMIN_PORT: '0',
    SHUTDOWN_TIMEOUT: '2s',
    LOG_LEVEL: 'warn',
  });
  const p = proc;
  await waitFor(() => /Ctrl-C stops everything/.test(p.output()), { timeoutMs: 90_000, what: 'the start banner' });
  // the loops' first claims (at start and once getMe answered) are over: only a wake claims now
  await waitFor(() => sandbox.botState(token).long_poll_open, { timeoutMs: 30_000, what: 'a long poll' });
  await new Promise((r) => setTimeout(r, 2_000));
  for (const [i, chatId] of [5001, 5002, 5003].entries()) {
    sandbox.injectMessage(token, { chatId, text: `ping ${i}` });
    await waitFor(() => sandbox.sent(token).some((m) => m.chat_id === chatId && m.text === `ping ${i}`), {
      timeoutMs: 20_000,
      what: `the echo to chat ${chatId}`,
    });
  }
  expect(sandbox.sent(token).map((m) => m.text)).toEqual(['ping 0', 'ping 1', 'ping 2']);
});
