/** `tg-relay worker` as a real process: dispatch is on exactly when BOT_HANDLERS is set, with the example bot. */
import { createBoss } from '../../../libs/db';
import { createBotApiSandbox, type BotApiSandbox } from '../../../libs/sandbox';
import { exited, runCli } from '../../support/cli';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import { killWorker, startWorkerProcess, workerStarted, type WorkerProcess } from '../../support/worker-process';
import { inboxRows, storeUpdates, TOKEN } from './helpers';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let sandbox: BotApiSandbox;
const children: WorkerProcess[] = [];

beforeAll(async () => {
  db = await createMigratedDatabase('dsp_proc');
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

describe('tg-relay worker and BOT_HANDLERS', () => {
  it('without BOT_HANDLERS says at start that dispatch is disabled', async () => {
    const w = startWorkerProcess({ DATABASE_URL: db.url });
    children.push(w);
    await workerStarted(w);
    expect(w.output()).toContain('BOT_HANDLERS is not set: update dispatch is DISABLED');
    w.kill('SIGTERM');
    expect(await exited(w)).toEqual({ code: 0, signal: null });
  });

  it('a BOT_HANDLERS module that cannot be found stops the worker with a configuration error', async () => {
    const r = await runCli(
      ['worker'],
      {
        DATABASE_URL: db.url,
        TELEGRAM_BOT_TOKEN: TOKEN,
        TELEGRAM_API_ROOT: sandbox.url,
        BOT_HANDLERS: './no/such-bot.ts',
      },
      { timeoutMs: 30_000 },
    );
    expect(r.code).toBe(78);
    expect(r.stderr).toContain('BOT_HANDLERS: cannot find module "./no/such-bot.ts"');
  });

  it('BOT_HANDLERS without TELEGRAM_BOT_TOKEN is a configuration error', async () => {
    const r = await runCli(
      ['worker'],
      { DATABASE_URL: db.url, BOT_HANDLERS: 'examples/echo-bot.ts' },
      { timeoutMs: 30_000 },
    );
    expect(r.code).toBe(78);
    expect(r.stderr).toContain('TELEGRAM_BOT_TOKEN: required with BOT_HANDLERS');
  });

  it('with the example bot and REPLY_MODE=direct: replies through the Bot API, marks the updates handled, answers the callback', async () => {
    const w = startWorkerProcess({
      DATABASE_URL: db.url,
      TELEGRAM_BOT_TOKEN: TOKEN,
      TELEGRAM_API_ROOT: sandbox.url,
      BOT_HANDLERS: 'examples/echo-bot.ts',
      REPLY_MODE: 'direct',
    });
    children.push(w);
    await workerStarted(w);
    expect(w.output()).toContain('update dispatch enabled');
    await waitFor(() => w.output().includes('bot handlers ready'), { what: 'getMe answered' });

    const boss = createBoss(db.url, { max: 1 });
    const start = sandbox.injectMessage(TOKEN, { chatId: 77, text: '/start' }) as never;
    const echo = sandbox.injectMessage(TOKEN, { chatId: 77, text: 'hello relay' }) as never;
    await storeUpdates(db.pool, boss, [start, echo]);
    await waitFor(async () => (await inboxRows(db.pool)).filter((r) => r.state === 'handled').length === 2, {
      what: 'both handled',
    });
    const sent = sandbox.sent(TOKEN).filter((s) => s.resolved_chat_id === 77);
    expect(sent.map((s) => s.text)).toEqual([expect.stringMatching(/^Hello, /), 'hello relay']);

    const cb = sandbox.injectCallbackQuery(TOKEN, { chatId: 77, data: 'like', messageId: sent[0].message_id }) as never;
    await storeUpdates(db.pool, boss, [cb]);
    await waitFor(async () => (await inboxRows(db.pool)).filter((r) => r.state === 'handled').length === 3, {
      what: 'callback handled',
    });
    expect(sandbox.answeredCallbacks(TOKEN)).toEqual([expect.objectContaining({ text: 'Thanks!' })]);
    expect(sandbox.calls(TOKEN, { method: 'getMe' })).toHaveLength(1);

    w.kill('SIGTERM');
    expect(await exited(w)).toEqual({ code: 0, signal: null });
  });

  it("REPLY_MODE=outbound (one variable): the same bot's replies go through relay.outbound, enqueued with the handled mark", async () => {
    const w = startWorkerProcess({
      DATABASE_URL: db.url,
      TELEGRAM_BOT_TOKEN: TOKEN,
      TELEGRAM_API_ROOT: sandbox.url,
      BOT_HANDLERS: 'examples/echo-bot.ts',
      REPLY_MODE: 'outbound',
    });
    children.push(w);
    await workerStarted(w);
    await waitFor(() => w.output().includes('bot handlers ready'), { what: 'getMe answered' });
    const update = sandbox.injectMessage(TOKEN, { chatId: 78, text: 'via the relay' });
    await storeUpdates(db.pool, createBoss(db.url, { max: 1 }), [update]);
    const row = await waitFor(
      async () =>
        (
          await db.pool.query(
            `select msg_id, kind, state, source_update_id::int as src from relay.outbound where source_update_id = $1`,
            [update.update_id],
          )
        ).rows.find((r) => r.state === 'delivered'),
      { what: 'reply delivered by outbound.send' },
    );
    expect(row).toEqual({
      msg_id: `update:${TOKEN.split(':')[0]}:${update.update_id}:1`,
      kind: 'reply',
      state: 'delivered',
      src: update.update_id,
    });
    expect(
      sandbox
        .sent(TOKEN)
        .filter((s) => s.resolved_chat_id === 78)
        .map((s) => s.text),
    ).toEqual(['via the relay']);
    w.kill('SIGTERM');
    expect(await exited(w)).toEqual({ code: 0, signal: null });
  });
});
