/** A real PostgreSQL restart under a running `tg-relay poller` process (its own server: restarting the shared one would break other files). */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createPool, migrateAll, Pool } from '../../../libs/db';
import type { BotApiSandbox } from '../../../libs/sandbox';
import { exited } from '../../support/cli';
import { cursorOf, inboxCount, inboxUpdateIds, newBotToken, range, startSandbox } from '../../support/ingress-harness';
import { killHard, PollerProcess, startPollerProcess } from '../../support/ingress-processes';
import { waitFor } from '../../support/wait-for';
import { RestartablePostgres, startRestartablePostgres } from '../../support/worker-restartable-pg';

let dir: string;
let pg: RestartablePostgres;
let pool: Pool;
let sandbox: BotApiSandbox;
let child: PollerProcess | undefined;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tg-relay-ingress-restart-'));
  fs.chmodSync(dir, 0o755);
  pg = await startRestartablePostgres(path.join(dir, 'pg'));
  await migrateAll(pg.url);
  pool = createPool(pg.url, { max: 4 });
  sandbox = await startSandbox();
}, 120_000);

afterAll(async () => {
  if (child) await killHard(child);
  await pool?.end();
  await sandbox?.stop();
  await pg?.stop();
  if (dir && !process.env.KEEP_TEST_DATA) fs.rmSync(dir, { recursive: true, force: true });
});

describe('a PostgreSQL restart while the poller runs', () => {
  it('does not crash it, loses nothing, duplicates nothing and confirms nothing uncommitted', async () => {
    const { token, botId } = newBotToken();
    sandbox.setFaults({ latencyMs: 10, methods: ['getUpdates'] }, token);
    const first = sandbox.injectMessages(token, 1000, { chats: 10, chatBase: Number(botId) });
    child = startPollerProcess({ databaseUrl: pg.url, apiRoot: sandbox.url, token, leaseTtl: '2s' });
    await waitFor(async () => (await inboxCount(pool, botId)) >= 100, {
      what: 'progress before the restart',
      timeoutMs: 30_000,
    });

    await pg.stop();
    const confirmedWhileDown = sandbox.confirmedOffset(token);
    sandbox.injectMessages(token, 200, { chats: 10, chatBase: Number(botId) });
    await new Promise((r) => setTimeout(r, 1000));
    expect(sandbox.confirmedOffset(token)).toBe(confirmedWhileDown); // no commit, no confirmation
    pg = await startRestartablePostgres(path.join(dir, 'pg'), pg.port);

    await waitFor(async () => (await inboxCount(pool, botId).catch(() => 0)) === 1200, {
      what: 'all 1200 stored after the restart',
      timeoutMs: 40_000,
    }).catch((err) => {
      throw new Error(`${err.message}\npoller output:\n${child!.output().slice(-3000)}`);
    });
    expect(child.exitCode).toBeNull();
    expect(await inboxUpdateIds(pool, botId)).toEqual(range(first.first_update_id!, 1200));
    const cursor = await cursorOf(pool, botId);
    expect(cursor?.nextOffset).toBe(first.first_update_id! + 1200);
    expect(sandbox.confirmedOffset(token)!).toBeLessThanOrEqual(cursor!.nextOffset);

    child.kill('SIGTERM');
    expect(await exited(child)).toEqual({ code: 0, signal: null });
    child = undefined;
  });
});
