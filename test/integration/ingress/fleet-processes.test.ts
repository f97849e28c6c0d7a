/**
 * Real `tg-relay poller` and `tg-relay worker` processes without a token serving 50 registered
 * bots: the pollers spread the bots, a SIGKILLed one's bots are taken over, a new one takes its
 * share; every update of every bot is stored exactly once and answered once, by its own bot,
 * through the workers. Tokens appear in no process output.
 */
import type { BotApiSandbox } from '../../../libs/sandbox';
import { exited } from '../../support/cli';
import { createMigratedDatabase } from '../../support/db';
import { FLEET_KEY_HEX, leaseOwners, registerBots, storedPerBot, type FleetBot } from '../../support/fleet-bots';
import { startSandbox } from '../../support/ingress-harness';
import { killHard, ownedBy, startFleetPollerProcess, type PollerProcess } from '../../support/ingress-processes';
import { startWorkerProcess } from '../../support/worker-process';
import { waitFor } from '../../support/wait-for';

jest.setTimeout(180_000);

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let sandbox: BotApiSandbox;
const procs: PollerProcess[] = [];

beforeAll(async () => {
  db = await createMigratedDatabase('ingress_fleet_proc');
  sandbox = await startSandbox();
});
afterAll(async () => {
  await Promise.all(procs.map(killHard));
  await sandbox.stop();
  await db.drop();
});

const spawn = () => {
  const p = startFleetPollerProcess({ databaseUrl: db.url, apiRoot: sandbox.url, tokenKeyHex: FLEET_KEY_HEX });
  procs.push(p);
  return p;
};

/** How many of the bots each live process holds the lease of. */
async function heldBy(bots: FleetBot[], ps: PollerProcess[]): Promise<number[]> {
  const owners = [
    ...(
      await leaseOwners(
        db.pool,
        bots.map((b) => b.botId),
      )
    ).values(),
  ];
  return ps.map((p) => owners.filter((o) => ownedBy(o, p)).length);
}

let sent = 0;
function inject(bots: FleetBot[]) {
  sent++;
  for (const [i, b] of bots.entries()) sandbox.injectMessage(b.token, { chatId: 7000 + i, text: `m${sent}` });
}

const allStoredOnce = (bots: FleetBot[]) =>
  waitFor(
    async () => {
      const s = await storedPerBot(
        db.pool,
        bots.map((b) => b.botId),
      );
      return [...s.values()].every((v) => v.rows === sent && v.distinct === sent);
    },
    { timeoutMs: 60_000, intervalMs: 200, what: `${sent} updates stored once for each bot` },
  );

it('50 bots, two pollers: spread, SIGKILL one and the other takes over, a third takes its share; each update stored once', async () => {
  const bots = await registerBots(db.pool, 50, { handlers: 'test/fixtures/text-reply-bot.ts' });
  const workers = [1, 2].map(() =>
    startWorkerProcess({ DATABASE_URL: db.url, TELEGRAM_API_ROOT: sandbox.url, TOKEN_ENCRYPTION_KEY: FLEET_KEY_HEX }),
  );
  procs.push(...workers);
  const [a, b] = [spawn(), spawn()];
  await waitFor(async () => (await heldBy(bots, [a, b])).join() === '25,25', {
    timeoutMs: 60_000,
    intervalMs: 200,
    what: '25 bots each',
  });
  inject(bots);
  await allStoredOnce(bots);

  const killedAt = Date.now();
  a.kill('SIGKILL');
  await exited(a);
  inject(bots); // half of them wait for the takeover, with Telegram
  await waitFor(async () => (await heldBy(bots, [b]))[0] === 50, {
    timeoutMs: 60_000,
    intervalMs: 200,
    what: 'the survivor polls all 50',
  });
  process.stdout.write(`fleet takeover of 25 bots after SIGKILL: ${Date.now() - killedAt} ms (LEASE_TTL 2 s)\n`);
  await allStoredOnce(bots);

  const c = spawn();
  await waitFor(async () => (await heldBy(bots, [b, c])).join() === '25,25', {
    timeoutMs: 60_000,
    intervalMs: 200,
    what: 'the new poller takes its share',
  });
  inject(bots);
  await allStoredOnce(bots);
  // confirmed only by each bot's next getUpdates after its commit: wait for that poll
  await waitFor(() => bots.every((bot) => sandbox.pendingCount(bot.token) === 0), {
    timeoutMs: 15_000,
    what: 'every update confirmed to Telegram',
  });
  // every message answered once, by its own bot, in its chat
  await waitFor(() => bots.every((bot) => sandbox.sent(bot.token).length >= sent), {
    timeoutMs: 60_000,
    intervalMs: 200,
    what: 'every message answered',
  });
  for (const [i, bot] of bots.entries())
    expect(sandbox.sent(bot.token).map((m) => [m.chat_id, m.text])).toEqual(Array(sent).fill([7000 + i, 'ok']));

  b.kill('SIGTERM');
  c.kill('SIGTERM');
  expect((await exited(b)).code).toBe(0);
  expect((await exited(c)).code).toBe(0);
  // a graceful stop leaves every lease free and no membership behind
  expect(
    [
      ...(
        await leaseOwners(
          db.pool,
          bots.map((x) => x.botId),
        )
      ).values(),
    ].every((o) => o === null),
  ).toBe(true);
  // the two that stopped left; the killed one's row has expired (it is deleted a minute later)
  const members = await db.pool.query<{ owner: string; live: boolean }>(
    'select owner, expires_at > clock_timestamp() as live from relay.ingress_members',
  );
  expect(members.rows.map((r) => [ownedBy(r.owner, a), r.live])).toEqual([[true, false]]);
  for (const p of [a, b, c, ...workers])
    for (const bot of bots) expect(p.output()).not.toContain(bot.token.split(':')[1]);
});
