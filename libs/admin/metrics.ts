import { collectDefaultMetrics, Counter, Registry } from 'prom-client';
import type { Queryable } from '../db/pool';
import type { Logger } from '../observability/logger';
import type { Readiness } from './health';
import type { Stats } from './stats';
import { pruneStatus } from '../retention/queries';
import { attemptsRecentByBot, openStateCountsByBot } from './queries';
import {
  configProblemGauge,
  pollerGauges,
  pruneGauges,
  queueGauges,
  quarantineGauge,
  readyGauge,
} from './metric-gauges';

/**
 * The admin API's /metrics. Everything read from the database is a GAUGE of current state (queue
 * depth, oldest pending age, last-minute rates, quarantine, config problems, poller lease and
 * progress, prune history), by bot where a bot applies: every admin replica reports the same
 * values, so aggregate replicas with `max`, never `sum` (then `sum` over bots). Counters of work done live on the processes that do it (METRICS_PORT on pollers,
 * workers and the bridge, libs/observability/metrics.ts); the only counter here is this admin
 * process's own HTTP requests.
 */
export interface AdminMetrics {
  registry: Registry;
  /** Refreshes gauges from a stats snapshot and readiness, returns the exposition. */
  scrape(snapshot: () => Promise<{ stats: Stats; readiness: Readiness }>): Promise<string>;
  /** Counts one answered request of this admin process (route pattern, not the raw URL). */
  request(method: string, route: string, status: number): void;
}

export function createAdminMetrics(opts: {
  db: Queryable;
  clock: () => Date;
  logger: Logger;
  processMetrics?: boolean;
}): AdminMetrics {
  const registry = new Registry();
  // Node's process metrics under their standard names (process_*, nodejs_*)
  if (opts.processMetrics) collectDefaultMetrics({ register: registry });
  const r = [registry];
  // registered in this order, which is the exposition's order of families
  const setQueue = queueGauges(r);
  const setConfigProblems = configProblemGauge(r);
  const requests = new Counter({
    name: 'tg_relay_admin_http_requests_total',
    help: 'HTTP requests this admin process answered, by method, route pattern and status',
    labelNames: ['method', 'route', 'status'],
    registers: r,
  });
  const setPollers = pollerGauges(r);
  const setQuarantine = quarantineGauge(r);
  const setReady = readyGauge(r);
  const setPrune = pruneGauges(r);

  let scraping: Promise<string> | undefined;
  const scrape = async (snapshot: () => Promise<{ stats: Stats; readiness: Readiness }>): Promise<string> => {
    const [{ stats, readiness }, prune, open, recent] = await Promise.all([
      snapshot(),
      // a database not yet migrated to 0010 has no prune history: the other metrics still answer
      pruneStatus(opts.db).catch((err) => void opts.logger.debug({ err }, 'prune status unavailable')),
      openStateCountsByBot(opts.db),
      attemptsRecentByBot(opts.db, new Date(opts.clock().getTime() - 60_000)),
    ]);
    const snap = { stats, bots: { open, recent } };
    setPrune(prune ?? undefined);
    setQueue(snap);
    setConfigProblems(readiness);
    setQuarantine(snap);
    setPollers(stats);
    setReady(readiness);
    return registry.metrics();
  };

  return {
    registry,
    request: (method, route, status) => requests.inc({ method, route, status: String(status) }),
    // concurrent scrapes share one refresh
    scrape: (snapshot) => {
      scraping ??= scrape(snapshot).finally(() => (scraping = undefined));
      return scraping;
    },
  };
}
