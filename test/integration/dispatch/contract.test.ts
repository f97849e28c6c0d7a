/**
 * The outcome contract end to end: inbox row, its pg-boss job and the audit rows, for each row of
 * the table in docs/dispatch.md. Real PostgreSQL, the real engine (libs/queue), the Bot API sandbox.
 */
import { createBotApiSandbox, type BotApiSandbox } from '../../../libs/sandbox';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import type { RegisterHandlers } from '../../../libs/dispatch';
import { QUEUES, withTransaction } from '../../../libs/db';
import { enqueueJobs, newJobId } from '../../../libs/queue';
import { attemptsOf, BOT_ID, DispatchHarness, inboxRows, startDispatchWorker, storeUpdates, TOKEN } from './helpers';

class Recoverable extends Error {}
class Hopeless extends Error {}

/** One bot whose behaviour is chosen by the message text. */
const contractBot: RegisterHandlers = (bot, dispatch) => {
  bot.use(async (ctx, next) => {
    if (ctx.text === 'stop') return; // a middleware deliberately stops the update (a rate limiter, say)
    if (ctx.text === 'middleware-throws') throw new TypeError('middleware broke');
    await next();
  });
  bot.hears('ok', (ctx) => ctx.reply('done'));
  bot.hears('throw', () => {
    throw new Hopeless('handler failed');
  });
  bot.hears('recoverable', () => {
    throw new Recoverable('known condition');
  });
  bot.hears('declined', () => {
    throw new Hopeless('declined by its handler');
  });
  bot.hears('recovery-throws', () => {
    throw new Recoverable('needs recovery');
  });
  bot.hears('slow', (ctx) => new Promise((resolve) => ctx.signal.addEventListener('abort', resolve)));
  bot.action('press', () => undefined);
  dispatch.autoAnswerCallbacks({ text: 'auto' });
  dispatch.onError(Recoverable, async (err, ctx) => {
    if (ctx.text === 'recovery-throws') throw new Error('recovery failed');
    await ctx.reply(`sorry: ${err.message}`);
    return 'handled';
  });
  dispatch.onError(Hopeless, () => Promise.resolve('unhandled'));
};

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let sandbox: BotApiSandbox;
let harness: DispatchHarness;

beforeAll(async () => {
  db = await createMigratedDatabase('dsp_contract');
  sandbox = createBotApiSandbox({ limits: { enabled: false } });
  await sandbox.start();
  harness = await startDispatchWorker({
    url: db.url,
    pool: db.pool,
    apiRoot: sandbox.url,
    register: contractBot,
    handlerTimeoutMs: 300,
  });
});
afterAll(async () => {
  await harness?.stop();
  await sandbox?.stop();
  await db?.drop();
});

const msg = (text: string, chatId: number) =>
  sandbox.injectMessage(TOKEN, { chatId, text }) as unknown as Record<string, unknown> & { update_id: number };

async function settle(
  text: string,
  chatId: number,
  until: (r: Awaited<ReturnType<typeof inboxRows>>[number]) => boolean,
) {
  const update = msg(text, chatId);
  await storeUpdates(db.pool, harness.boss, [update]);
  return waitFor(
    async () => (await inboxRows(db.pool)).find((r) => Number(r.update_id) === update.update_id && until(r)),
    {
      what: `update "${text}" to settle`,
      timeoutMs: 10_000,
    },
  );
}

describe('update.dispatch outcome contract', () => {
  it('handler succeeds → handled, job completed, one audit row with its duration', async () => {
    const row = await settle('ok', 101, (r) => r.state === 'handled');
    expect(row).toMatchObject({ attempts: 1, claim_id: null, job_state: 'completed' });
    expect(row.handled_at).toBeInstanceOf(Date);
    expect(
      sandbox
        .sent(TOKEN)
        .filter((s) => s.resolved_chat_id === 101)
        .map((s) => s.text),
    ).toEqual(['done']);
    const audit = await attemptsOf(db.pool, row.id);
    expect(audit).toEqual([expect.objectContaining({ attempt: 1, outcome: 'handled', error_code: null, error: null })]);
    expect(audit[0].duration_ms).toEqual(expect.any(Number));
    expect(audit[0].details).toMatchObject({ via: 'handler', updateType: 'message' });
  });

  it('no route matches → handled', async () => {
    const row = await settle('nothing matches this', 102, (r) => r.state === 'handled');
    expect(row).toMatchObject({ attempts: 1, job_state: 'completed' });
  });

  it('a middleware deliberately stops the update → handled', async () => {
    const row = await settle('stop', 103, (r) => r.state === 'handled');
    expect(row).toMatchObject({ attempts: 1, job_state: 'completed' });
  });

  it('callback query with the opted-in automatic answer → handled after the answer succeeded', async () => {
    const cb = sandbox.injectCallbackQuery(TOKEN, { chatId: 104, data: 'press' }) as unknown as Record<
      string,
      unknown
    > & { update_id: number };
    const [id] = await storeUpdates(db.pool, harness.boss, [cb]);
    await waitFor(async () => (await inboxRows(db.pool)).find((r) => r.id === id && r.state === 'handled'), {
      what: 'callback handled',
    });
    expect(sandbox.answeredCallbacks(TOKEN)).toContainEqual(expect.objectContaining({ text: 'auto' }));
  });

  it('handler throws → stays pending with attempts+1 and the error kept, retried with backoff, then failed after the budget', async () => {
    const update = msg('throw', 105);
    const [id] = await storeUpdates(db.pool, harness.boss, [update]);
    const failed = await waitFor(
      async () => (await inboxRows(db.pool)).find((r) => r.id === id && r.state === 'failed'),
      {
        what: 'budget spent',
        timeoutMs: 10_000,
      },
    );
    expect(failed).toMatchObject({ attempts: 3, job_state: 'failed', claim_id: null });
    expect(failed.last_error).toMatch(/attempt budget spent \(3 of 3\); last error: handler failed/);
    const audit = await attemptsOf(db.pool, id);
    expect(audit.map((a) => [a.attempt, a.outcome, a.error_code, a.error])).toEqual([
      [1, 'retry', 'Hopeless', 'handler failed'],
      [2, 'retry', 'Hopeless', 'handler failed'],
      [3, 'failed', 'Hopeless', 'handler failed'],
    ]);
    expect(audit.every((a) => typeof a.duration_ms === 'number' && a.details.errorClass === 'Hopeless')).toBe(true);
    expect(audit[0].details.delayMs).toEqual(expect.any(Number));
  });

  it('between retries the row is pending with attempts, last_error and a later next_attempt_at', async () => {
    await harness.stop(); // freeze the engine so the intermediate state can be seen
    try {
      const update = msg('throw', 106);
      const [id] = await storeUpdates(db.pool, harness.boss, [update]);
      const once = await startDispatchWorker({
        url: db.url,
        pool: db.pool,
        apiRoot: sandbox.url,
        register: contractBot,
        config: { retry: { baseMs: 60_000, capMs: 60_000, maxAttempts: 3 } },
      });
      try {
        const row = await waitFor(
          async () => (await inboxRows(db.pool)).find((r) => r.id === id && r.attempts === 1 && r.claim_id === null),
          {
            what: 'first attempt settled',
          },
        );
        expect(row).toMatchObject({ state: 'pending', last_error: 'handler failed', job_state: 'retry' });
      } finally {
        await once.stop();
      }
    } finally {
      harness = await startDispatchWorker({
        url: db.url,
        pool: db.pool,
        apiRoot: sandbox.url,
        register: contractBot,
        handlerTimeoutMs: 300,
      });
    }
  });

  it('middleware throws → retried like a handler', async () => {
    const row = await settle('middleware-throws', 107, (r) => r.state === 'failed');
    expect(row.attempts).toBe(3);
    expect((await attemptsOf(db.pool, row.id))[0]).toMatchObject({
      outcome: 'retry',
      error_code: 'TypeError',
      error: 'middleware broke',
    });
  });

  it('an error handler returns "handled" for that error type → handled', async () => {
    const row = await settle('recoverable', 108, (r) => r.state === 'handled');
    expect(row).toMatchObject({ attempts: 1, job_state: 'completed' });
    expect(
      sandbox
        .sent(TOKEN)
        .filter((s) => s.resolved_chat_id === 108)
        .map((s) => s.text),
    ).toEqual(['sorry: known condition']);
    expect((await attemptsOf(db.pool, row.id))[0].details).toMatchObject({
      via: 'error_handler',
      handledError: { errorClass: 'Recoverable' },
    });
  });

  it('an error handler returns "unhandled" → retried', async () => {
    const row = await settle('declined', 109, (r) => r.state === 'failed');
    expect(row.attempts).toBe(3);
  });

  it('an error handler throws → retried with the new error, the original in the audit details', async () => {
    const row = await settle('recovery-throws', 110, (r) => r.state === 'failed');
    const audit = await attemptsOf(db.pool, row.id);
    expect(audit[0]).toMatchObject({ outcome: 'retry', error_code: 'Error', error: 'recovery failed' });
    expect(audit[0].details.originalError).toMatchObject({ errorClass: 'Recoverable', message: 'needs recovery' });
  });

  it('handler exceeds HANDLER_TIMEOUT → treated as a throw (its signal fired), retried', async () => {
    const row = await settle('slow', 111, (r) => r.state === 'failed');
    const audit = await attemptsOf(db.pool, row.id);
    expect(audit[0]).toMatchObject({ outcome: 'retry', error_code: 'HandlerTimeoutError' });
    expect(audit[0].details).toMatchObject({ timedOut: true, code: 'RELAY_HANDLER_TIMEOUT' });
    expect(audit[0].duration_ms).toBeGreaterThanOrEqual(290);
  });

  it('a stored payload that is not an update → failed at once (terminal)', async () => {
    await withTransaction(db.pool, async (c) => {
      const jobId = newJobId();
      const { rows } = await c.query(
        `insert into relay.inbox (bot_id, update_id, update_type, chat_id, payload, job_id) values ($1, 999999, 'message', 112, '"garbage"', $2) returning id`,
        [BOT_ID, jobId],
      );
      await enqueueJobs(c, harness.boss, QUEUES.dispatch, [{ id: jobId, data: { id: Number(rows[0].id) } }]);
    });
    const row = await waitFor(
      async () => (await inboxRows(db.pool)).find((r) => r.update_id === '999999' && r.state === 'failed'),
      { what: 'terminal' },
    );
    expect(row.attempts).toBe(1);
    expect(row.last_error).toBe('the stored payload is not a Telegram update (no integer update_id)');
    expect((await attemptsOf(db.pool, row.id))[0]).toMatchObject({
      outcome: 'failed',
      error_code: 'RELAY_DISPATCH_BAD_PAYLOAD',
    });
  });
});
