/**
 * errors thrown by middleware (auth, a transaction wrapper — anything that is
 * not a route handler) never enter the class-specific error handlers: they fail the update (retried,
 * then failed after the budget), even when an error handler for their class would return 'handled'.
 * Errors thrown by route handlers still reach the error handlers.
 */
import { createBotApiSandbox, type BotApiSandbox } from '../../../libs/sandbox';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import type { RegisterHandlers } from '../../../libs/dispatch';
import { attemptsOf, DispatchHarness, inboxRows, startDispatchWorker, storeUpdates, TOKEN } from './helpers';

class AuthDown extends Error {}
class TxFailed extends Error {}

const handled: string[] = [];

/** A handler module with an auth and a transaction middleware, and error handlers that would accept their errors. */
const bot: RegisterHandlers = (b, dispatch) => {
  b.use(async (ctx, next) => {
    if (ctx.text === 'auth-fails') throw new AuthDown('auth backend unreachable');
    await next();
  });
  b.use(async (ctx, next) => {
    await next(); // the route ran; the commit fails
    if (ctx.text === 'tx-fails') throw new TxFailed('commit failed');
  });
  b.use(async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      if (ctx.text === 'tx-wraps') throw new TxFailed('rolled back after a route error'); // a new error: the middleware's own
      throw err;
    }
  });
  b.hears('route-fails', () => {
    throw new AuthDown('the route itself hit the known condition');
  });
  b.hears('tx-wraps', () => {
    throw new Error('route error');
  });
  b.hears(['auth-fails', 'tx-fails'], (ctx) => ctx.reply('route ran'));
  dispatch.onError(AuthDown, (err, ctx) => {
    handled.push(`${ctx.text}: ${err.message}`);
    return Promise.resolve('handled');
  });
  dispatch.onError(TxFailed, (err, ctx) => {
    handled.push(`${ctx.text}: ${err.message}`);
    return Promise.resolve('handled');
  });
};

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let sandbox: BotApiSandbox;
let harness: DispatchHarness;

beforeAll(async () => {
  db = await createMigratedDatabase('dsp_mw_errors');
  sandbox = createBotApiSandbox({ limits: { enabled: false } });
  await sandbox.start();
  harness = await startDispatchWorker({ url: db.url, pool: db.pool, apiRoot: sandbox.url, register: bot });
});
afterAll(async () => {
  await harness?.stop();
  await sandbox?.stop();
  await db?.drop();
});

const msg = (text: string, chatId: number) =>
  sandbox.injectMessage(TOKEN, { chatId, text }) as unknown as Record<string, unknown> & { update_id: number };

async function final(text: string, chatId: number) {
  const [id] = await storeUpdates(db.pool, harness.boss, [msg(text, chatId)]);
  return waitFor(async () => (await inboxRows(db.pool)).find((r) => r.id === id && r.state !== 'pending'), {
    what: `"${text}" settled`,
    timeoutMs: 15_000,
  });
}

describe('middleware failures never reach error handlers', () => {
  it('an auth middleware that throws fails the update although an error handler for its class returns handled', async () => {
    const row = await final('auth-fails', 201);
    expect(row).toMatchObject({ state: 'failed', attempts: 3 });
    expect(row.last_error).toMatch(/auth backend unreachable/);
    const audit = await attemptsOf(db.pool, row.id);
    expect(audit.map((a) => a.outcome)).toEqual(['retry', 'retry', 'failed']);
    expect(audit.every((a) => a.error_code === 'AuthDown' && a.details.via === undefined)).toBe(true);
    expect(handled.filter((h) => h.startsWith('auth-fails'))).toEqual([]);
  });

  it('a transaction middleware that fails after the route ran fails the update', async () => {
    const row = await final('tx-fails', 202);
    expect(row).toMatchObject({ state: 'failed', attempts: 3 });
    expect(handled.filter((h) => h.startsWith('tx-fails'))).toEqual([]);
  });

  it('a middleware that turns a route error into its own error fails the update', async () => {
    const row = await final('tx-wraps', 203);
    expect(row).toMatchObject({ state: 'failed', attempts: 3 });
    expect(row.last_error).toMatch(/rolled back after a route error/);
    expect(handled.filter((h) => h.startsWith('tx-wraps'))).toEqual([]);
  });

  it('the same error class thrown by a route handler (passing back through the middlewares unchanged) is still offered to the error handler', async () => {
    const row = await final('route-fails', 204);
    expect(row).toMatchObject({ state: 'handled', attempts: 1 });
    const audit = await attemptsOf(db.pool, row.id);
    expect(audit[0].details).toMatchObject({ via: 'error_handler', handledError: { errorClass: 'AuthDown' } });
    expect(handled).toContain('route-fails: the route itself hit the known condition');
  });
});
