/**
 * `tg-relay start`: everything in one process — PostgreSQL (embedded unless DATABASE_URL is set),
 * migrations, the poller, a worker and the admin API. Without TELEGRAM_BOT_TOKEN it runs in
 * sandbox mode against the bundled Bot API sandbox and collector, with the example bot.
 */
import { resolveAdminTokens } from '../../libs/admin/auth';
import { Config, describeConfig, loadConfig } from '../../libs/config';
import { createPool, Database, QUEUES, migrateAll, migrationDatabaseUrl, resolveDatabase } from '../../libs/db';
import { startIngress, IngressRuntime } from '../../libs/ingress/runtime';
import { JetStreamRuntime, startJetStreamRuntime } from '../../libs/jetstream/runtime';
import { EXIT_COMPONENT_DIED, EXIT_CONFIG, EXIT_STALLED } from '../../libs/lifecycle/exit-codes';
import { waitAtMost } from '../../libs/lifecycle/timers';
import { onShutdownSignal } from '../../libs/lifecycle/shutdown';
import { createLogger } from '../../libs/observability/logger';
import { AdminRuntime, startAdminRuntime } from '../../libs/runtime/admin';
import { MetricsEndpoint, startMetricsEndpoint } from '../../libs/runtime/metrics-endpoint';
import { EXAMPLE_BOT, SANDBOX_CHAT_ID, SandboxMode, startSandboxMode } from '../../libs/runtime/sandbox-mode';
import { startWorkerRuntime, WorkerRuntime } from '../../libs/runtime/worker';

/** Beyond SHUTDOWN_TIMEOUT, how long a dying `start` waits for the rest to stop (a stuck part must not keep it alive). */
const DYING_STOP_GRACE_MS = 5_000;

function say(lines: string[]): void {
  process.stdout.write(`${lines.join('\n')}\n`);
}

/** The handlers the banner names: the operator's BOT_HANDLERS as given, or the bundled example. */
function botLabel(handlers: string | undefined): string {
  return !handlers || handlers === EXAMPLE_BOT ? 'examples/echo-bot.ts' : handlers;
}

export async function run(): Promise<number> {
  let config: Config = loadConfig();
  // refuse an unsafe admin binding before starting anything (it throws with the reason)
  resolveAdminTokens(config);
  const logger = createLogger({ level: config.LOG_LEVEL }).child({ app: 'start' });

  let sandboxMode: SandboxMode | undefined;
  let db: Database | undefined;
  let ingress: IngressRuntime | undefined;
  let worker: WorkerRuntime | undefined;
  let admin: AdminRuntime | undefined;
  let jetstream: JetStreamRuntime | undefined; // NATS_URL set: the JetStream bridge too
  let metrics: MetricsEndpoint | undefined; // METRICS_PORT set: one endpoint for the whole process
  let stopping: Promise<void> | undefined;
  const stopAll = () =>
    (stopping ??= (async () => {
      // order matters: stop taking updates, drain workers, then the API, then the peers and the database
      await jetstream?.stop().catch((err) => logger.error({ err }, 'stopping the jetstream bridge failed'));
      await ingress?.stop().catch((err) => logger.error({ err }, 'stopping ingress failed'));
      await worker?.stop(config.SHUTDOWN_TIMEOUT).catch((err) => logger.error({ err }, 'stopping the worker failed'));
      await admin?.stop().catch((err) => logger.error({ err }, 'stopping the admin API failed'));
      await metrics?.server.close();
      await sandboxMode?.stop();
      await db?.stop().catch((err) => logger.error({ err }, 'stopping PostgreSQL failed'));
    })());

  onShutdownSignal(stopAll, logger, config);
  try {
    db = await resolveDatabase(config, logger);
    await migrateAll(await migrationDatabaseUrl(db, config, logger), logger);
    if (!config.TELEGRAM_BOT_TOKEN) {
      const pool = createPool(db.url, { max: 1, applicationName: 'tg-relay:start', poolMode: config.DB_POOL_MODE });
      try {
        sandboxMode = await startSandboxMode(config, logger, pool);
      } finally {
        await pool.end();
      }
      config = sandboxMode.config;
    }
    say(['tg-relay start — effective configuration:', ...describeConfig(config).map((l) => `  ${l}`)]);

    metrics = await startMetricsEndpoint(config, logger);
    ingress = await startIngress({ config, databaseUrl: db.url, logger, metrics: metrics?.registry });
    metrics?.server.addCheck('poller', ingress.ready);
    worker = await startWorkerRuntime({ config, databaseUrl: db.url, logger, metrics: metrics?.registry });
    metrics?.server.addCheck('worker', worker.ready);
    // the poller and the dispatch loop share this process: a committed batch wakes dispatch directly
    const w = worker;
    ingress.onStored(() => w.wake(QUEUES.dispatch));
    if (config.NATS_URL) {
      jetstream = await startJetStreamRuntime({ config, databaseUrl: db.url, logger, metrics: metrics?.registry });
      metrics?.server.addCheck('jetstream', jetstream.ready);
    }
    admin = await startAdminRuntime({
      config,
      databaseUrl: db.url,
      logger,
      sandbox: sandboxMode
        ? { url: sandboxMode.sandbox.url, token: config.TELEGRAM_BOT_TOKEN!, chatId: SANDBOX_CHAT_ID }
        : undefined,
    });
  } catch (err) {
    await stopAll();
    throw err;
  }

  const token = admin.generated?.token ?? (config.ADMIN_TOKEN ? '(ADMIN_TOKEN)' : '(one of ADMIN_TOKENS)');
  const lines = [''];
  if (sandboxMode) {
    const sandboxUrl = sandboxMode.sandbox.url;
    const env = sandboxUrl === 'http://127.0.0.1:8081' ? '' : `SANDBOX_URL=${sandboxUrl} `;
    lines.push(
      '  ┌ SANDBOX MODE — no TELEGRAM_BOT_TOKEN: a local Bot API sandbox stands in for Telegram,',
      `  │ a local collector receives captures, and the bot (${botLabel(config.BOT_HANDLERS)}) answers.`,
      `  │ database: ${db.kind === 'embedded' ? `embedded PostgreSQL in ${db.dataDir ?? `${config.DATA_DIR}/postgres`}` : 'DATABASE_URL'}`,
      `  │ admin API: ${admin.address}   dashboard: ${admin.address}/`,
      `  │ admin token: ${token}`,
      '  │ send a user message:',
      `  │   ${env}npx tg-relay sandbox send "hello"`,
      '  │ then watch it flow:',
      `  │   curl -s -H 'Authorization: Bearer ${admin.generated?.token ?? '$ADMIN_TOKEN'}' ${admin.address}/v1/stats`,
      '  └ Ctrl-C stops everything; the next start resumes from the stored cursor.',
    );
  } else {
    lines.push(
      `  tg-relay is running for bot ${ingress.botId} (${config.INGRESS}), database: ${db.kind}`,
      `  admin API: ${admin.address}   dashboard: ${admin.address}/   token: ${token}`,
      '  Ctrl-C stops everything.',
    );
  }
  say([...lines, '']);

  // One component dying ends the whole process with a non-zero code, so its supervisor restarts a
  // whole tg-relay instead of leaving one running half-alive (say, a worker with no poller).
  const death = await Promise.race([
    ingress.done.then((exit) => {
      switch (exit.reason) {
        case 'stopped':
          return new Promise<never>(() => undefined); // stop() came from the shutdown handler, which exits
        case 'unauthorized':
          return { what: 'poller', message: exit.message, code: EXIT_CONFIG };
        case 'refused':
          return { what: 'poller', message: exit.message, code: exit.exitCode };
        case 'stalled':
          return { what: 'poller', message: exit.message, code: EXIT_STALLED };
        case 'crashed':
          return { what: 'poller', message: exit.message, code: EXIT_COMPONENT_DIED };
      }
    }),
    worker.died.then((message) => ({ what: 'worker', message, code: EXIT_COMPONENT_DIED })),
    admin.died.then((message) => ({ what: 'admin API', message, code: EXIT_COMPONENT_DIED })),
    // the stand-ins for Telegram and the collector live in this process: without them nothing flows
    ...(sandboxMode
      ? [sandboxMode.died.then((message) => ({ what: 'sandbox', message, code: EXIT_COMPONENT_DIED }))]
      : []),
  ]);
  process.stderr.write(
    `tg-relay start: the ${death.what} stopped (${death.message}); stopping everything and exiting ${death.code}\n`,
  );
  logger.fatal({ component: death.what, exitCode: death.code }, `${death.what} died: tg-relay start exits`);
  await waitAtMost(stopAll(), config.SHUTDOWN_TIMEOUT + DYING_STOP_GRACE_MS);
  return death.code;
}
