/**
 * Fleet ingress in this process: pollers without a token share the registered bots through their
 * leases (spread, cap, hand-over, disable, a refused token), against the Bot API sandbox and a real
 * PostgreSQL. SIGKILLed poller processes are in fleet-processes.test.ts.
 */
import { botSetEnabled } from '../../../libs/bots';
import { startFleetIngress, type FleetConfig, type FleetRuntime } from '../../../libs/ingress/fleet-runtime';
import type { BotApiSandbox } from '../../../libs/sandbox';
import { createMigratedDatabase } from '../../support/db';
import { FLEET_KEY_HEX, leaseOwners, registerBots, storedPerBot, type FleetBot } from '../../support/fleet-bots';
import { memoryLogger, startSandbox } from '../../support/ingress-harness';
import { waitFor } from '../../support/wait-for';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let sandbox: BotApiSandbox;
const fleets: FleetRuntime[] = [];

beforeAll(async () => {
  db = await createMigratedDatabase('ingress_fleet');
  sandbox = await startSandbox();
});

afterEach(async () => {
  await Promise.all(fleets.splice(0).map((f) => f.stop()));
  await db.pool.query('truncate relay.bots, relay.cursor, relay.ingress_members');
});

afterAll(async () => {
  await sandbox.stop();
  await db.drop();
});

const config = (o: Partial<FleetConfig> = {}): FleetConfig => ({
  TELEGRAM_API_ROOT: sandbox.url,
  INGRESS: 'polling',
  DECODE_POLICY: 'quarantine',
  LEASE_TTL: 1_500,
  POLL_TIMEOUT: 1_000,
  DISPATCH_UNAUTHORIZED: false,
  TOKEN_ENCRYPTION_KEY: FLEET_KEY_HEX,
  POLLER_MAX_BOTS: 100,
  DB_POOL_MAX: 6,
  WEBHOOK_HOST: '127.0.0.1',
  WEBHOOK_PORT: 0,
  WEBHOOK_PUBLIC_URL: undefined,
  ...o,
});

const start = async (o: Partial<FleetConfig> = {}, logs = memoryLogger('info')) => {
  const f = await startFleetIngress({ config: config(o), databaseUrl: db.url, logger: logs.logger, tickMs: 200 });
  fleets.push(f);
  return f;
};

/** How many of `bots` each owner holds the lease of. */
const held = async (bots: FleetBot[]) => {
  const count = new Map<string | null, number>();
  for (const owner of (
    await leaseOwners(
      db.pool,
      bots.map((b) => b.botId),
    )
  ).values())
    count.set(owner, (count.get(owner) ?? 0) + 1);
  return count;
};

const inject = (bots: FleetBot[], text: string) => {
  for (const [i, b] of bots.entries()) sandbox.injectMessage(b.token, { chatId: 5000 + i, text });
};

/** Waits until every bot has `n` updates stored, each once. */
const allStored = (bots: FleetBot[], n: number) =>
  waitFor(
    async () => {
      const s = await storedPerBot(
        db.pool,
        bots.map((b) => b.botId),
      );
      return [...s.values()].every((v) => v.rows === n && v.distinct === n) && s;
    },
    { timeoutMs: 20_000, what: `${n} updates stored for each of ${bots.length} bots` },
  );

it('two pollers spread six bots evenly; one leaving gives its bots to the other; every update is stored once', async () => {
  const bots = await registerBots(db.pool, 6);
  const a = await start();
  await waitFor(async () => (await held(bots)).get(a.owner) === 6, { what: 'the first poller polls all six' });
  inject(bots, 'one');
  await allStored(bots, 1);

  const b = await start();
  await waitFor(
    async () => {
      const h = await held(bots);
      return h.get(a.owner) === 3 && h.get(b.owner) === 3;
    },
    { what: 'three bots each' },
  );
  inject(bots, 'two');
  await allStored(bots, 2);

  await b.stop();
  await waitFor(async () => (await held(bots)).get(a.owner) === 6, { what: 'the first poller takes them back' });
  inject(bots, 'three');
  await allStored(bots, 3);
  // what Telegram was told to forget is what was stored: nothing is left waiting in the sandbox,
  // once each bot's next getUpdates after its commit has confirmed it
  await waitFor(() => bots.every((bot) => sandbox.pendingCount(bot.token) === 0), {
    timeoutMs: 15_000,
    what: 'every update confirmed to Telegram',
  });
});

it('POLLER_MAX_BOTS caps a poller, and another takes the rest', async () => {
  const bots = await registerBots(db.pool, 5);
  const small = await start({ POLLER_MAX_BOTS: 2 });
  await waitFor(async () => (await held(bots)).get(small.owner) === 2, { what: 'two bots polled' });
  const big = await start();
  await waitFor(
    async () => {
      const h = await held(bots);
      return h.get(small.owner) === 2 && h.get(big.owner) === 3;
    },
    { what: 'the other three taken by the second poller' },
  );
  inject(bots, 'hello');
  await allStored(bots, 1);
});

it('a bot disabled at run time stops being polled within seconds; enabled again, what it was sent is stored', async () => {
  const bots = await registerBots(db.pool, 2);
  const logs = memoryLogger('info');
  const f = await start({}, logs);
  await waitFor(async () => (await held(bots)).get(f.owner) === 2, { what: 'both polled' });
  const [off, on] = bots;
  await botSetEnabled(db.pool, off.botId, false);
  await waitFor(async () => (await leaseOwners(db.pool, [off.botId])).get(off.botId) === null, {
    what: 'the disabled bot’s lease released',
  });
  // stopped because it was disabled, not because the share shrank; the other bot is kept
  const stops = logs.lines().filter((l) => l.msg === 'bot poller stopping');
  expect(stops.map((l) => [l.botId, l.why])).toEqual([[off.botId, 'disabled or removed']]);
  inject(bots, 'while disabled');
  await waitFor(async () => (await storedPerBot(db.pool, [on.botId])).get(on.botId)!.rows === 1);
  expect((await storedPerBot(db.pool, [off.botId])).get(off.botId)!.rows).toBe(0);
  expect(sandbox.pendingCount(off.token)).toBe(1); // left with Telegram, not lost

  await botSetEnabled(db.pool, off.botId, true);
  await allStored(bots, 1);
});

it('a token Telegram refuses stops that bot only, says why without the token, and is tried again once its registration changes', async () => {
  const bots = await registerBots(db.pool, 3);
  const logs = memoryLogger('info');
  const [revoked, ...others] = bots;
  // refused from the first call (a token that worked once and then gets a 401 is retried, as in single-bot mode)
  sandbox.revokeToken(revoked.token);
  const f = await start({}, logs);
  await waitFor(() => f.status()?.benched.some((b) => b.botId === revoked.botId), { what: 'the revoked bot benched' });
  const ready = await f.ready();
  expect(ready.ready).toBe(true);
  expect(JSON.stringify(ready.benched)).toMatch(/401|rejected/);
  inject(others, 'still here');
  await allStored(others, 1);
  expect(f.status()!.polling.map((p) => p.botId)).not.toContain(revoked.botId);
  for (const b of bots) {
    expect(logs.text()).not.toContain(b.token);
    expect(JSON.stringify(ready)).not.toContain(b.token);
  }
  const benchedLogs = () => logs.lines().filter((l) => l.msg === 'bot not polled until its registration changes');
  expect(benchedLogs()).toHaveLength(1);
  // a changed registration (its version moves) is tried again: here Telegram still refuses it
  await db.pool.query('update relay.bots set version = version + 1 where id = $1', [revoked.botId]);
  await waitFor(() => benchedLogs().length === 2, { what: 'the re-registered bot tried again' });
});

it('refuses to start without TOKEN_ENCRYPTION_KEY, or in webhook mode without WEBHOOK_PUBLIC_URL, naming the variable', async () => {
  await expect(start({ TOKEN_ENCRYPTION_KEY: undefined })).rejects.toThrow(
    /TOKEN_ENCRYPTION_KEY: required by a poller/,
  );
  await expect(start({ INGRESS: 'webhook' })).rejects.toThrow(/WEBHOOK_PUBLIC_URL: required when INGRESS=webhook/);
});
