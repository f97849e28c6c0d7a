/**
 * `tg-relay poller`: durable ingress for the bot of TELEGRAM_BOT_TOKEN — getUpdates (INGRESS=polling)
 * or the webhook endpoint (INGRESS=webhook) — as lease owner or hot standby. Without a token it is a
 * fleet poller: it serves its share of the registered bots (libs/ingress/fleet.ts), each by its own
 * long poll or (INGRESS=webhook) by its own path and secret on one webhook server. First
 * SIGTERM/SIGINT finishes the in-flight batches, releases the leases and exits 0; a 401 from
 * Telegram exits 78 in single-bot mode (a fleet poller stops polling only that bot).
 */
import { loadConfig } from '../../libs/config';
import { resolveDatabase } from '../../libs/db';
import { checkFleetConfig, startFleetIngress } from '../../libs/ingress/fleet-runtime';
import { checkIngressConfig, startIngress } from '../../libs/ingress/runtime';
import { EXIT_CONFIG, EXIT_STALLED } from '../../libs/lifecycle/exit-codes';
import { waitAtMost } from '../../libs/lifecycle/timers';
import { onShutdownSignal } from '../../libs/lifecycle/shutdown';
import { createLogger } from '../../libs/observability/logger';
import { startMetricsEndpoint } from '../../libs/runtime/metrics-endpoint';

/** How long a stalled poller waits for its own shutdown (its loop may be stuck for good). */
const STALLED_STOP_TIMEOUT_MS = 5_000;

export async function run(): Promise<number> {
  const config = loadConfig();
  const fleet = !config.TELEGRAM_BOT_TOKEN;
  if (fleet) checkFleetConfig(config);
  else checkIngressConfig(config);
  const logger = createLogger({ level: config.LOG_LEVEL }).child({ app: 'poller' });
  const metrics = await startMetricsEndpoint(config, logger);
  const db = await resolveDatabase(config, logger).catch(async (err) => {
    await metrics?.server.close();
    throw err;
  });
  const start = fleet ? startFleetIngress : startIngress;
  const ingress = await start({ config, databaseUrl: db.url, logger, metrics: metrics?.registry });
  metrics?.server.addCheck('poller', ingress.ready);
  const closeMetrics = () => metrics?.server.close() ?? Promise.resolve();
  const removeSignals = onShutdownSignal(
    async () => {
      await ingress.stop();
      await closeMetrics();
      await db.stop();
    },
    logger,
    config,
  );
  const exit = await ingress.done;
  removeSignals();
  if (exit.reason === 'stalled') {
    process.stderr.write(`tg-relay poller: ${exit.message}\n`);
    await waitAtMost(Promise.all([ingress.stop(), closeMetrics(), db.stop()]), STALLED_STOP_TIMEOUT_MS);
    return EXIT_STALLED;
  }
  await ingress.stop();
  await closeMetrics();
  await db.stop();
  if (exit.reason === 'unauthorized') {
    process.stderr.write(`tg-relay poller: ${exit.message}\n`);
    return EXIT_CONFIG;
  }
  if (exit.reason === 'refused') {
    process.stderr.write(`tg-relay poller: ${exit.message}\n`);
    return exit.exitCode;
  }
  if (exit.reason === 'crashed') {
    process.stderr.write(`tg-relay poller: ${exit.message}\n`);
    return 1;
  }
  return 0;
}
