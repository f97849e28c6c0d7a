/**
 * A worker without TELEGRAM_BOT_TOKEN delivers each registered bot's captures to that bot's own
 * collector, else to CAPTURE_URL; a bot with neither has its captures left pending and unclaimed
 * (one warning), until it is given one at run time. A collector's configuration problem is the
 * bot's: recorded under its id and alerted to its own operators' chat, sent by that bot. Real fleet
 * poller and worker runtime in this process, the Bot API sandbox, collectors, PostgreSQL.
 */
import { loadConfig } from '../../../libs/config';
import { startFleetIngress, type FleetRuntime } from '../../../libs/ingress/fleet-runtime';
import { startWorkerRuntime, type WorkerRuntime } from '../../../libs/runtime/worker';
import { createCollector, type BotApiSandbox, type Collector } from '../../../libs/sandbox';
import { createMigratedDatabase } from '../../support/db';
import { FLEET_KEY_HEX, registerBots, type FleetBot } from '../../support/fleet-bots';
import { memoryLogger, startSandbox } from '../../support/ingress-harness';
import { waitFor } from '../../support/wait-for';

jest.setTimeout(60_000);

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let sandbox: BotApiSandbox;
let fleet: FleetRuntime | undefined;
let worker: WorkerRuntime | undefined;
const collectors: Collector[] = [];
const OPS_CHAT_ID = '-1009000';

beforeAll(async () => {
  db = await createMigratedDatabase('cap_fleet');
  sandbox = await startSandbox({ limits: { enabled: false } });
  for (let i = 0; i < 3; i++) {
    const c = createCollector();
    await c.start();
    collectors.push(c);
  }
});
afterEach(async () => {
  await worker?.stop(2_000);
  await fleet?.stop();
  worker = fleet = undefined;
  await db.pool.query('update relay.bots set enabled = false');
  for (const c of collectors) {
    c.setFaults(null);
    c.reset();
  }
});
afterAll(async () => {
  await sandbox.stop();
  for (const c of collectors) await c.stop();
  await db.drop();
});

const configOf = (env: Record<string, string> = {}) =>
  loadConfig({
    DATABASE_URL: db.url,
    TELEGRAM_API_ROOT: sandbox.url,
    TOKEN_ENCRYPTION_KEY: FLEET_KEY_HEX,
    LEASE_TTL: '2s',
    POLL_TIMEOUT: '1s',
    SHUTDOWN_TIMEOUT: '2s',
    RETRY_BASE: '50ms',
    RETRY_CAP: '500ms',
    ...env,
  });

const setBot = (bot: FleetBot, fields: { capture_url?: string | null; ops_chat_id?: string | null }) =>
  db.pool.query(
    'update relay.bots set capture_url = coalesce($2, capture_url), ops_chat_id = coalesce($3, ops_chat_id) where id = $1',
    [bot.botId, fields.capture_url ?? null, fields.ops_chat_id ?? null],
  );

/** The capture keys of a bot, from the database. */
const keysOf = async (bot: FleetBot): Promise<string[]> =>
  (
    await db.pool.query<{ capture_key: string }>('select capture_key from relay.captures where bot_id = $1', [
      bot.botId,
    ])
  ).rows
    .map((r) => r.capture_key)
    .sort();

const received = (c: Collector): string[] => [...c.byKey().keys()].sort();

/** Injects `n` messages to each bot and waits until the poller stored a capture of each. */
async function captured(bots: FleetBot[], n: number): Promise<void> {
  const before = new Map<string, number>();
  for (const b of bots) before.set(b.botId, (await keysOf(b)).length);
  for (const [i, b] of bots.entries())
    for (let k = 0; k < n; k++) sandbox.injectMessage(b.token, { chatId: 700 + i, text: `capture ${k}` });
  await waitFor(
    async () => {
      for (const b of bots) if ((await keysOf(b)).length < before.get(b.botId)! + n) return false;
      return true;
    },
    { timeoutMs: 20_000, what: 'the captures stored' },
  );
}

it("each bot's captures go to its own collector, a bot without one's to CAPTURE_URL", async () => {
  const [ownA, ownB, plain] = collectors;
  const [a, b, c] = await registerBots(db.pool, 3);
  await setBot(a, { capture_url: ownA.captureUrl });
  await setBot(b, { capture_url: ownB.captureUrl });
  const config = configOf({ CAPTURE_URL: plain.captureUrl });
  const logs = memoryLogger('info');
  fleet = await startFleetIngress({ config, databaseUrl: db.url, logger: logs.logger });
  worker = await startWorkerRuntime({ config, databaseUrl: db.url, logger: logs.logger });
  await captured([a, b, c], 3);

  const delivered = async () =>
    (await db.pool.query(`select count(*)::int as n from relay.captures where state = 'delivered'`)).rows[0].n;
  await waitFor(async () => (await delivered()) === 9, { timeoutMs: 20_000, what: 'all 9 captures delivered' });
  expect(received(ownA)).toEqual(await keysOf(a));
  expect(received(ownB)).toEqual(await keysOf(b));
  expect(received(plain)).toEqual(await keysOf(c));
  for (const k of await keysOf(a)) expect(k).toContain(`telegram:${a.botId}:`);
  for (const bot of [a, b, c]) expect(logs.text()).not.toContain(bot.token);
});

it('a bot without a collector keeps its captures pending, unclaimed, with one warning, until it is given one', async () => {
  const [own, late] = collectors;
  const [a, d] = await registerBots(db.pool, 2);
  await setBot(a, { capture_url: own.captureUrl });
  const config = configOf(); // no CAPTURE_URL
  const logs = memoryLogger('info');
  fleet = await startFleetIngress({ config, databaseUrl: db.url, logger: logs.logger });
  worker = await startWorkerRuntime({ config, databaseUrl: db.url, logger: logs.logger });
  expect(worker.queues).toContain('capture.deliver');
  await captured([a, d], 3);
  await waitFor(() => received(own).length === 3, { timeoutMs: 20_000, what: "the bot with a collector's captures" });
  // d's were stored before and after a's were delivered: never claimed, no attempt spent
  await captured([d], 2);
  await new Promise((r) => setTimeout(r, 1_000)); // claims of the worker ran meanwhile (it delivered a's)
  const { rows } = await db.pool.query<{ state: string; attempts: number; worker_id: string | null }>(
    'select state, attempts, worker_id from relay.captures where bot_id = $1',
    [d.botId],
  );
  expect(rows).toHaveLength(5);
  expect(rows.every((r) => r.state === 'pending' && r.attempts === 0 && r.worker_id === null)).toBe(true);
  const audit = await db.pool.query(
    `select count(*)::int as n from relay.attempts a join relay.captures c on a.subject = 'capture' and a.subject_id = c.id where c.bot_id = $1`,
    [d.botId],
  );
  expect(audit.rows[0].n).toBe(0);
  expect(received(own)).toEqual(await keysOf(a));
  const warnings = logs.lines().filter((l) => l.botId === d.botId && /no capture URL/.test(String(l.msg)));
  expect(warnings).toHaveLength(1);
  expect(logs.lines().filter((l) => l.botId === a.botId && /no capture URL/.test(String(l.msg)))).toHaveLength(0);

  // given a collector at run time: the running worker delivers the backlog there
  await setBot(d, { capture_url: late.captureUrl });
  await waitFor(() => received(late).length === 5, { timeoutMs: 20_000, what: 'the backlog delivered' });
  expect(received(late)).toEqual(await keysOf(d));
  expect(received(own)).toEqual(await keysOf(a));
});

it("a collector's configuration problem is the bot's: recorded under it and alerted to its own operators' chat, by it", async () => {
  const [broken, fine] = collectors;
  const [a, b] = await registerBots(db.pool, 2);
  await setBot(a, { capture_url: broken.captureUrl, ops_chat_id: '-1001111' });
  await setBot(b, { capture_url: fine.captureUrl });
  broken.setFaults({ rejectRate: 1, rejectStatus: 401 });
  const config = configOf({ OPS_CHAT_ID, CAPTURE_URL: fine.captureUrl });
  const logs = memoryLogger('info');
  fleet = await startFleetIngress({ config, databaseUrl: db.url, logger: logs.logger });
  worker = await startWorkerRuntime({ config, databaseUrl: db.url, logger: logs.logger });
  await captured([a, b], 2);

  // the alert reaches a's operators' chat, sent with a's token
  await waitFor(() => sandbox.sent(a.token).some((m) => String(m.chat_id) === '-1001111'), {
    timeoutMs: 20_000,
    what: "the alert in a's operators' chat",
  });
  const alert = sandbox.sent(a.token).find((m) => String(m.chat_id) === '-1001111')!;
  expect(alert.text).toContain('capture delivery is misconfigured');
  const problems = await db.pool.query<{ component: string; bot_id: string; code: string }>(
    'select component, bot_id, code from relay.config_problems',
  );
  expect(problems.rows).toEqual([{ component: 'capture', bot_id: a.botId, code: 'HTTP_401' }]);
  // b's collector works: its captures are delivered and nothing is said in any chat about it
  await waitFor(() => received(fine).length === 2, { timeoutMs: 20_000, what: "b's captures delivered" });
  expect(sandbox.sent(b.token)).toEqual([]);
  expect(sandbox.sent(a.token).filter((m) => String(m.chat_id) === OPS_CHAT_ID)).toEqual([]);
  // kept and retried, not failed (one may be in an attempt right now)
  const statesA = await db.pool.query<{ state: string }>('select state from relay.captures where bot_id = $1', [
    a.botId,
  ]);
  expect(statesA.rows.map((r) => r.state).filter((st) => st !== 'pending' && st !== 'delivering')).toEqual([]);
  expect(statesA.rows).toHaveLength(2);

  // the collector works again: a's captures are delivered and a's problem ends
  broken.setFaults(null);
  await waitFor(() => received(broken).length === 2, { timeoutMs: 20_000, what: "a's captures delivered" });
  await waitFor(async () => (await db.pool.query('select 1 from relay.config_problems')).rowCount === 0, {
    what: 'the problem cleared',
  });
});
