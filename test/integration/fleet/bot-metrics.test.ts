/**
 * METRICS_PORT's instruments in a fleet poller and a fleet worker (no TELEGRAM_BOT_TOKEN), in this
 * process on one registry as `tg-relay start` has it: each bot's updates and attempts count under
 * its own `bot_id`, equal to what the database holds for it; a bot disabled at run time has every
 * series of its own removed (the poller gave it up, the worker's loops no longer serve it) while
 * the other bot's stay as they were. Real runtimes, the Bot API sandbox, a collector, PostgreSQL.
 */
import type { Registry } from 'prom-client';
import { botSetEnabled } from '../../../libs/bots';
import { loadConfig } from '../../../libs/config';
import { startFleetIngress, type FleetRuntime } from '../../../libs/ingress/fleet-runtime';
import { createProcessRegistry } from '../../../libs/observability/metrics';
import { startWorkerRuntime, type WorkerRuntime } from '../../../libs/runtime/worker';
import { createCollector, type BotApiSandbox, type Collector } from '../../../libs/sandbox';
import { parsePrometheus, type Sample } from '../admin/prom-parse';
import { createMigratedDatabase } from '../../support/db';
import { FLEET_KEY_HEX, registerBots } from '../../support/fleet-bots';
import { memoryLogger, startSandbox } from '../../support/ingress-harness';
import { waitFor } from '../../support/wait-for';

jest.setTimeout(90_000);

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let sandbox: BotApiSandbox;
let collector: Collector;
let fleet: FleetRuntime | undefined;
let worker: WorkerRuntime | undefined;

beforeAll(async () => {
  db = await createMigratedDatabase('fleet_botmet');
  sandbox = await startSandbox({ limits: { enabled: false } });
  collector = createCollector();
  await collector.start();
});
afterAll(async () => {
  await worker?.stop(2_000);
  await fleet?.stop();
  await collector?.stop();
  await sandbox?.stop();
  await db?.drop();
});

const samplesOf = async (registry: Registry): Promise<Sample[]> =>
  [...parsePrometheus(await registry.metrics()).values()].flatMap((f) => f.samples);
const sum = (samples: Sample[], name: string, labels: Record<string, string>) =>
  samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((a, s) => a + s.value, 0);
/** The bots named by the samples of the families this test watches. */
const FAMILIES = [
  'tg_relay_attempts_total',
  'tg_relay_attempt_duration_seconds_count',
  'tg_relay_attempt_http_responses_total',
  'tg_relay_ingress_updates_total',
  'tg_relay_get_updates_total',
  'tg_relay_batch_duration_seconds_count',
  'tg_relay_ingress_lease_owner',
];
const botsIn = (samples: Sample[], name: string) =>
  [...new Set(samples.filter((s) => s.name === name).map((s) => s.labels.bot_id))].sort();

it("each bot's updates and attempts count under its bot_id; a bot disabled at run time loses its series, the other keeps its own", async () => {
  const [a, b] = await registerBots(db.pool, 2);
  await db.pool.query('update relay.bots set capture_url = $1', [collector.captureUrl]);
  const config = loadConfig({
    DATABASE_URL: db.url,
    TELEGRAM_API_ROOT: sandbox.url,
    TOKEN_ENCRYPTION_KEY: FLEET_KEY_HEX,
    LEASE_TTL: '2s',
    POLL_TIMEOUT: '1s',
    SHUTDOWN_TIMEOUT: '2s',
  });
  const registry = createProcessRegistry({ defaultMetrics: false });
  const { logger } = memoryLogger('error');
  fleet = await startFleetIngress({ config, databaseUrl: db.url, logger, metrics: registry });
  worker = await startWorkerRuntime({ config, databaseUrl: db.url, logger, metrics: registry });
  // different counts per bot, so a count under the wrong bot cannot pass
  const sent = { [a.botId]: 2, [b.botId]: 3 };
  for (const [i, bot] of [a, b].entries())
    for (let k = 0; k < sent[bot.botId]; k++) sandbox.injectMessage(bot.token, { chatId: 800 + i, text: `m${k}` });
  const deliveredOf = async (botId: string) =>
    (
      await db.pool.query<{ n: number }>(
        `select count(*)::int as n from relay.captures where bot_id = $1 and state = 'delivered'`,
        [botId],
      )
    ).rows[0].n;
  await waitFor(
    async () =>
      ((await deliveredOf(a.botId)) === sent[a.botId] && (await deliveredOf(b.botId)) === sent[b.botId]) || undefined,
    { timeoutMs: 30_000, what: "every bot's captures delivered" },
  );
  const delivered = (s: Sample[], botId: string) =>
    sum(s, 'tg_relay_attempts_total', { queue: 'capture.deliver', outcome: 'delivered', bot_id: botId });
  // an outcome is counted right after its transaction commits
  await waitFor(
    async () => {
      const s = await samplesOf(registry);
      return (delivered(s, a.botId) === sent[a.botId] && delivered(s, b.botId) === sent[b.botId]) || undefined;
    },
    { timeoutMs: 10_000, what: 'every delivery counted under its bot' },
  );
  const before = await samplesOf(registry);
  for (const bot of [a, b]) {
    const id = bot.botId;
    expect([id, sum(before, 'tg_relay_ingress_updates_total', { result: 'stored', bot_id: id })]).toEqual([
      id,
      sent[id],
    ]);
    expect([id, sum(before, 'tg_relay_get_updates_total', { result: 'updates', bot_id: id })]).toEqual([
      id,
      expect.any(Number),
    ]);
    expect(sum(before, 'tg_relay_get_updates_total', { result: 'updates', bot_id: id })).toBeGreaterThanOrEqual(1);
    expect(
      sum(before, 'tg_relay_attempt_duration_seconds_count', {
        queue: 'capture.deliver',
        outcome: 'delivered',
        bot_id: id,
      }),
    ).toBe(sent[id]);
    expect(
      sum(before, 'tg_relay_attempt_http_responses_total', { queue: 'capture.deliver', status: '200', bot_id: id }),
    ).toBe(sent[id]);
  }
  for (const name of FAMILIES) expect([name, botsIn(before, name)]).toEqual([name, [a.botId, b.botId].sort()]);

  await botSetEnabled(db.pool, b.botId, false);
  await waitFor(
    async () => {
      const s = await samplesOf(registry);
      return FAMILIES.every((name) => !botsIn(s, name).includes(b.botId)) || undefined;
    },
    { timeoutMs: 20_000, what: "the disabled bot's series removed" },
  );
  const after = await samplesOf(registry);
  for (const name of FAMILIES) expect([name, botsIn(after, name)]).toEqual([name, [a.botId]]);
  expect(delivered(after, a.botId)).toBe(sent[a.botId]);
  expect(sum(after, 'tg_relay_ingress_updates_total', { result: 'stored', bot_id: a.botId })).toBe(sent[a.botId]);
});
