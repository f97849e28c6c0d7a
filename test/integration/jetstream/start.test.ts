/** `tg-relay start` with NATS_URL runs the JetStream bridge next to the poller, worker and admin API. */
import { freePort } from '../../../libs/db';
import { createBotApiSandbox, type BotApiSandbox } from '../../../libs/sandbox';
import { parsePrometheus } from '../admin/prom-parse';
import { exited, startCli } from '../../support/cli';
import { createMigratedDatabase } from '../../support/db';
import { natsScope, NatsScope, NATS_URL } from '../../support/jetstream';
import { waitFor } from '../../support/wait-for';

const TOKEN = '8181:start-jetstream-token-not-a-secret';
let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let sb: BotApiSandbox;
let scope: NatsScope;
let proc: ReturnType<typeof startCli> | undefined;

beforeAll(async () => {
  db = await createMigratedDatabase('js_start');
  sb = createBotApiSandbox({ seed: 5 });
  await sb.start();
  scope = await natsScope('S');
});
afterAll(async () => {
  if (proc && proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  await scope.cleanup();
  await sb.stop();
  await db.drop();
});

it('a message published on NATS is sent by the all-in-one process, its one METRICS_PORT endpoint covers poller, worker and bridge; SIGTERM stops it cleanly', async () => {
  const metricsPort = await freePort();
  proc = startCli(['start'], {
    METRICS_PORT: String(metricsPort),
    METRICS_HOST: '127.0.0.1',
    DATABASE_URL: db.url,
    TELEGRAM_BOT_TOKEN: TOKEN,
    TELEGRAM_API_ROOT: sb.url,
    OPS_CHAT_ID: '-100818',
    ADMIN_PORT: '0',
    POLL_TIMEOUT: '1s',
    NATS_URL,
    NATS_STREAM: scope.stream,
    NATS_SUBJECT: scope.subject,
    NATS_ALERT_SUBJECT: scope.alertSubject,
    NATS_CONSUMER: scope.consumer,
    JETSTREAM_HEALTH_PORT: '0',
    LOG_LEVEL: 'info',
  });
  const p = proc;
  await waitFor(() => p.output().includes('jetstream bridge bound'), {
    timeoutMs: 60_000,
    what: 'bridge bound inside start',
  });
  await scope.publish({ msg_id: 'start-1', text: 'from the fleet', kind: 'info' }, 'start-1');
  await waitFor(() => sb.sent(TOKEN).find((m) => m.text === 'from the fleet'), {
    timeoutMs: 30_000,
    what: 'sent to Telegram',
  });
  expect(sb.sent(TOKEN).filter((m) => m.text === 'from the fleet')).toEqual([
    expect.objectContaining({ chat_id: -100818 }),
  ]);
  const row = await waitFor(
    async () =>
      (
        await db.pool.query(
          `select state, publisher_kind from relay.outbound where msg_id = 'start-1' and state = 'delivered'`,
        )
      ).rows[0],
    { what: 'delivered' },
  );
  expect(row).toEqual({ state: 'delivered', publisher_kind: 'info' });

  // one endpoint for the whole process: every component's readiness and metrics
  const endpoint = `http://127.0.0.1:${metricsPort}`;
  const ready = await waitFor(
    async () => {
      const res = await fetch(`${endpoint}/health/ready`);
      return res.status === 200 ? ((await res.json()) as { checks: Record<string, unknown> }) : undefined;
    },
    { what: 'start ready on METRICS_PORT' },
  );
  expect(Object.keys(ready.checks).sort()).toEqual(['jetstream', 'poller', 'worker']);
  const fams = parsePrometheus(await (await fetch(`${endpoint}/metrics`)).text());
  for (const name of [
    'tg_relay_get_updates_total',
    'tg_relay_attempts_total',
    'tg_relay_jetstream_messages_total',
    'process_cpu_seconds_total',
  ])
    expect([name, fams.has(name)]).toEqual([name, true]);
  const delivered = fams
    .get('tg_relay_attempts_total')!
    .samples.find((s) => s.labels.queue === 'outbound.send' && s.labels.outcome === 'delivered');
  expect(delivered?.value).toBe(1);

  p.kill('SIGTERM');
  expect(await exited(p)).toEqual({ code: 0, signal: null });
  await expect(fetch(`${endpoint}/health/live`)).rejects.toThrow();
});
