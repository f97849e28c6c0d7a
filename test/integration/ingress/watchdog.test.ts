/**
 * The poller watchdog: a real `tg-relay poller` whose database path freezes mid-batch (no error,
 * no FIN: its commit never returns) while Telegram holds updates exits non-zero by itself after
 * 2 × POLL_TIMEOUT without progress, instead of sitting on the lease; restarted (as a supervisor
 * would), it stores the updates.
 */
import type { BotApiSandbox } from '../../../libs/sandbox';
import { exited } from '../../support/cli';
import { createMigratedDatabase } from '../../support/db';
import { FreezableProxy, startFreezableProxy } from '../../support/freezable-proxy';
import { cursorOf, inboxCount, newBotToken, startSandbox } from '../../support/ingress-harness';
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
    await waitFor(async () => ownedBy((await cursorOf(db.pool, botId))?.leaseOwner, stuck), { what: 'the poller owns the lease', timeoutMs: 60_000 });
    const before = (await cursorOf(db.pool, botId))!.nextOffset;

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
    await waitFor(async () => (await inboxCount(db.pool, botId)) === 3, { what: 'the restarted poller stored the updates', timeoutMs: 60_000 });
    expect(ownedBy((await cursorOf(db.pool, botId))?.leaseOwner, restarted)).toBe(true);
  });
});
