/**
 * Fleet webhook ingress: pollers without a token and INGRESS=webhook serve registered bots on one
 * HTTP server each, every bot with its own path and secret, against the Bot API sandbox (which
 * delivers to the registered URL as Telegram does, retrying whatever is not a 2xx) and a real
 * PostgreSQL; SIGKILLed poller processes at the end.
 */
import crypto from 'node:crypto';
import { botSetEnabled } from '../../../libs/bots';
import { freePort } from '../../../libs/db';
import { startFleetIngress, type FleetConfig, type FleetRuntime } from '../../../libs/ingress/fleet-runtime';
import { fleetWebhookKeys } from '../../../libs/ingress/webhook-keys';
import type { BotApiSandbox } from '../../../libs/sandbox';
import { createMigratedDatabase } from '../../support/db';
import {
  FLEET_KEY,
  FLEET_KEY_HEX,
  leaseOwners,
  registerBots,
  storedPerBot,
  type FleetBot,
} from '../../support/fleet-bots';
import { makeMessageUpdate } from '../../support/ingress-fixtures';
import { inboxUpdateIds, memoryLogger, startSandbox } from '../../support/ingress-harness';
import {
  killHard,
  ownedBy,
  startFleetPollerProcess,
  startListening,
  type PollerProcess,
} from '../../support/ingress-processes';
import { waitFor } from '../../support/wait-for';

jest.setTimeout(90_000);

const keys = fleetWebhookKeys(FLEET_KEY);
let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let sandbox: BotApiSandbox;
const fleets: FleetRuntime[] = [];
const procs: PollerProcess[] = [];

beforeAll(async () => {
  db = await createMigratedDatabase('ingress_fleet_webhook');
  // Telegram's retry delays, shortened: a refused delivery comes back within a fraction of a second
  sandbox = await startSandbox({ webhookRetry: { baseMs: 50, capMs: 200, timeoutMs: 5000 } });
});

afterEach(async () => {
  await Promise.all(fleets.splice(0).map((f) => f.stop()));
  await Promise.all(procs.splice(0).map(killHard));
  await db.pool.query('truncate relay.bots, relay.cursor, relay.ingress_members, relay.inbox, relay.quarantine');
});

afterAll(async () => {
  await sandbox.stop();
  await db.drop();
});

interface WebhookFleet {
  fleet: FleetRuntime;
  base: string;
  logs: ReturnType<typeof memoryLogger>;
}

const start = async (o: Partial<FleetConfig> = {}): Promise<WebhookFleet> => {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const logs = memoryLogger('info');
  const config: FleetConfig = {
    TELEGRAM_API_ROOT: sandbox.url,
    INGRESS: 'webhook',
    DECODE_POLICY: 'quarantine',
    LEASE_TTL: 1_500,
    POLL_TIMEOUT: 1_000,
    DISPATCH_UNAUTHORIZED: false,
    TOKEN_ENCRYPTION_KEY: FLEET_KEY_HEX,
    POLLER_MAX_BOTS: 100,
    DB_POOL_MAX: 6,
    WEBHOOK_HOST: '127.0.0.1',
    WEBHOOK_PORT: port,
    WEBHOOK_PUBLIC_URL: base,
    ...o,
  };
  const fleet = await startFleetIngress({ config, databaseUrl: db.url, logger: logs.logger, tickMs: 200 });
  fleets.push(fleet);
  return { fleet, base, logs };
};

const urlOf = (base: string, botId: string) => `${base}/telegram/webhook/${keys.pathKey(botId)}`;

/** Waits until every bot's webhook is registered at `base` (its lease owner's server). */
const registeredAt = (bots: FleetBot[], base: string) =>
  waitFor(() => bots.every((b) => sandbox.webhookInfo(b.token).url === urlOf(base, b.botId)), {
    timeoutMs: 20_000,
    what: `${bots.length} webhooks registered at ${base}`,
  });

const post = (url: string, body: unknown, secret?: string) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(secret ? { 'x-telegram-bot-api-secret-token': secret } : {}) },
    body: JSON.stringify(body),
  });

const stored = async () =>
  (
    await db.pool.query<{ n: number }>(
      'select ((select count(*) from relay.inbox) + (select count(*) from relay.quarantine))::int as n',
    )
  ).rows[0].n;

/** Injects one message per bot (the same chat and message ids for every bot) and answers the update ids. */
const inject = (bots: FleetBot[], text: string) =>
  bots.map((b) => sandbox.injectMessage(b.token, { chatId: 4242, text }).update_id);

/** Waits until every bot has exactly `ids[i]` stored, each once, and Telegram holds nothing for it. */
const allStored = (bots: FleetBot[], ids: number[][]) =>
  waitFor(
    async () => {
      for (const [i, b] of bots.entries()) {
        if (sandbox.pendingCount(b.token) !== 0) return false;
        const got = await inboxUpdateIds(db.pool, b.botId);
        if (got.join() !== [...ids[i]].sort((x, y) => x - y).join()) return false;
      }
      return true;
    },
    { timeoutMs: 20_000, what: 'every update stored once, under its own bot' },
  );

it('registers each bot’s webhook with its own path and secret; each bot’s updates are stored once, under its bot id', async () => {
  const bots = await registerBots(db.pool, 3);
  const { base, logs } = await start();
  await registeredAt(bots, base);
  for (const b of bots) {
    const calls = sandbox.calls(b.token, { method: 'setWebhook' });
    expect(calls.map((c) => c.params.secret_token)).toEqual(calls.map(() => keys.secret(b.botId)));
  }
  expect(new Set(bots.map((b) => keys.secret(b.botId))).size).toBe(3);

  const ids = bots.map(() => [] as number[]);
  for (const text of ['one', 'two']) inject(bots, text).forEach((id, i) => ids[i].push(id));
  await allStored(bots, ids);
  const per = await storedPerBot(
    db.pool,
    bots.map((b) => b.botId),
  );
  for (const b of bots) expect(per.get(b.botId)).toEqual({ rows: 2, distinct: 2 });
  expect(await stored()).toBe(6);
  // the same chat and message ids under three bots are three captures, one per bot
  const { rows } = await db.pool.query<{ bot_id: string; n: number }>(
    `select bot_id, count(*)::int as n from relay.inbox where bot_id = any($1) group by bot_id`,
    [bots.map((b) => b.botId)],
  );
  expect(rows).toHaveLength(3);
  for (const b of bots) {
    expect(logs.text()).not.toContain(b.token);
    expect(logs.text()).not.toContain(keys.secret(b.botId));
  }
});

it('refuses a wrong secret, another bot’s secret, another bot’s path and unknown paths, and stores nothing', async () => {
  const [a, b] = await registerBots(db.pool, 2);
  const { base } = await start();
  await registeredAt([a, b], base);
  const update = makeMessageUpdate({ updateId: 900_001, chatId: 77 });
  const other = fleetWebhookKeys({ key: crypto.randomBytes(32), id: 'other' });
  const answers = {
    noSecret: (await post(urlOf(base, a.botId), update)).status,
    wrongSecret: (await post(urlOf(base, a.botId), update, 'not-the-secret-0123456789')).status,
    otherBotsSecret: (await post(urlOf(base, a.botId), update, keys.secret(b.botId))).status,
    anotherKeysSecret: (await post(urlOf(base, a.botId), update, other.secret(a.botId))).status,
    anotherKeysPath: (await post(`${base}/telegram/webhook/${other.pathKey(a.botId)}`, update, keys.secret(a.botId)))
      .status,
    botIdAsPath: (await post(`${base}/telegram/webhook/${a.botId}`, update, keys.secret(a.botId))).status,
    pathCaseChanged: (
      await post(`${base}/telegram/webhook/${keys.pathKey(a.botId).toUpperCase()}`, update, keys.secret(a.botId))
    ).status,
  };
  expect(answers).toEqual({
    noSecret: 401,
    wrongSecret: 401,
    otherBotsSecret: 401,
    anotherKeysSecret: 401,
    anotherKeysPath: 404,
    botIdAsPath: 404,
    pathCaseChanged: 404,
  });
  expect(await stored()).toBe(0);
  // the right path and secret are accepted: the refusals above were about them
  expect((await post(urlOf(base, a.botId), update, keys.secret(a.botId))).status).toBe(200);
  expect(await inboxUpdateIds(db.pool, a.botId)).toEqual([900_001]);
  expect(await inboxUpdateIds(db.pool, b.botId)).toEqual([]);
});

it('a bot disabled at run time stops being accepted within seconds; its updates wait with Telegram until it is enabled', async () => {
  const [off, on] = await registerBots(db.pool, 2);
  const { fleet, base } = await start();
  await registeredAt([off, on], base);
  await botSetEnabled(db.pool, off.botId, false);
  await waitFor(() => !fleet.status()!.polling.some((p) => p.botId === off.botId), {
    timeoutMs: 10_000,
    what: 'the disabled bot’s webhook unit stopped',
  });
  const probe = await post(
    urlOf(base, off.botId),
    makeMessageUpdate({ updateId: 1, chatId: 5 }),
    keys.secret(off.botId),
  );
  expect(probe.status).toBe(404);
  expect((await leaseOwners(db.pool, [off.botId])).get(off.botId)).toBeNull();

  const failedBefore = sandbox.stats().webhook.failed;
  const [offId, onId] = inject([off, on], 'while disabled');
  await allStored([on], [[onId]]);
  await waitFor(() => sandbox.stats().webhook.failed > failedBefore, { what: 'the disabled bot’s delivery refused' });
  expect(await inboxUpdateIds(db.pool, off.botId)).toEqual([]);
  expect(sandbox.pendingCount(off.token)).toBe(1); // refused, so Telegram keeps it

  await botSetEnabled(db.pool, off.botId, true);
  await allStored([off, on], [[offId], [onId]]);
});

it('a bot whose token Telegram refuses is benched and its path refused; the other bots are served', async () => {
  const [revoked, ok] = await registerBots(db.pool, 2);
  sandbox.revokeToken(revoked.token);
  const { fleet, base, logs } = await start();
  await waitFor(() => fleet.status()?.benched.some((x) => x.botId === revoked.botId), {
    what: 'the revoked bot benched',
  });
  await registeredAt([ok], base);
  const update = makeMessageUpdate({ updateId: 900_003, chatId: 9 });
  expect((await post(urlOf(base, revoked.botId), update, keys.secret(revoked.botId))).status).toBe(404);
  expect(await inboxUpdateIds(db.pool, revoked.botId)).toEqual([]);
  const [, okId] = inject([revoked, ok], 'hello');
  await allStored([ok], [[okId]]);
  expect(logs.text()).not.toContain(revoked.token);
});

it('two webhook pollers share the bots; a bot that moves is registered at its new owner, and the old one refuses it', async () => {
  const bots = await registerBots(db.pool, 4);
  const a = await start();
  await registeredAt(bots, a.base);
  const b = await start();
  const heldBy = async (f: WebhookFleet) => {
    const owners = await leaseOwners(
      db.pool,
      bots.map((x) => x.botId),
    );
    return bots.filter((x) => owners.get(x.botId) === f.fleet.owner);
  };
  await waitFor(async () => (await heldBy(a)).length === 2 && (await heldBy(b)).length === 2, {
    timeoutMs: 20_000,
    what: 'two bots each',
  });
  const [ofA, ofB] = [await heldBy(a), await heldBy(b)];
  await registeredAt(ofA, a.base);
  await registeredAt(ofB, b.base); // taken over from the first poller: registered again, at the second one's URL
  const ids = bots.map(() => [] as number[]);
  inject(bots, 'shared').forEach((id, i) => ids[i].push(id));
  await allStored(bots, ids);
  // the first poller no longer serves a bot the second one holds, even with its right secret
  const moved = ofB[0];
  const late = makeMessageUpdate({ updateId: 900_002, chatId: 8 });
  expect((await post(urlOf(a.base, moved.botId), late, keys.secret(moved.botId))).status).toBe(404);
  expect(await inboxUpdateIds(db.pool, moved.botId)).toEqual(ids[bots.indexOf(moved)]);

  await b.fleet.stop();
  await registeredAt(bots, a.base); // and back again
  inject(bots, 'back').forEach((id, i) => ids[i].push(id));
  await allStored(bots, ids);
  expect(a.logs.lines().filter((l) => l.msg === 'webhook registered').length).toBeGreaterThanOrEqual(6);
});

it('poller processes: a SIGKILLed webhook poller’s bots are taken over and registered at the survivor; every update is stored once', async () => {
  const bots = await registerBots(db.pool, 6);
  const spawn = async () => {
    const { p, port } = await startListening((port) => {
      const started = startFleetPollerProcess({
        databaseUrl: db.url,
        apiRoot: sandbox.url,
        tokenKeyHex: FLEET_KEY_HEX,
        extra: {
          INGRESS: 'webhook',
          WEBHOOK_HOST: '127.0.0.1',
          WEBHOOK_PORT: String(port),
          WEBHOOK_PUBLIC_URL: `http://127.0.0.1:${port}`,
        },
      });
      procs.push(started);
      return started;
    });
    return { p, base: `http://127.0.0.1:${port}` };
  };
  const [a, b] = [await spawn(), await spawn()];
  const owners = async () =>
    leaseOwners(
      db.pool,
      bots.map((x) => x.botId),
    );
  await waitFor(
    async () => {
      for (const x of [a, b])
        if (x.p.exitCode !== null) throw new Error(`a poller exited: ${x.p.output().slice(-2000)}`);
      const o = [...(await owners()).values()];
      const [ofA, ofB] = [o.filter((x) => ownedBy(x, a.p)).length, o.filter((x) => ownedBy(x, b.p)).length];
      if (ofA === 3 && ofB === 3) return true;
      throw new Error(`leases held ${ofA} and ${ofB}`);
    },
    { timeoutMs: 60_000, intervalMs: 200, what: 'three bots each' },
  );
  const o = await owners();
  await registeredAt(
    bots.filter((x) => ownedBy(o.get(x.botId), a.p)),
    a.base,
  );
  await registeredAt(
    bots.filter((x) => ownedBy(o.get(x.botId), b.p)),
    b.base,
  );
  const ids = bots.map(() => [] as number[]);
  inject(bots, 'before').forEach((id, i) => ids[i].push(id));
  await allStored(bots, ids);

  await killHard(b.p);
  // sent while the killed poller's leases have not expired yet: Telegram keeps retrying them
  inject(bots, 'during').forEach((id, i) => ids[i].push(id));
  await registeredAt(bots, a.base);
  inject(bots, 'after').forEach((id, i) => ids[i].push(id));
  await allStored(bots, ids);
  for (const x of bots) expect(a.p.output()).not.toContain(x.token);
});
