import type { Logger } from '../observability/logger';
import { shutdownTracing } from '../observability/tracing';
import { TIMER_MAX_MS } from '../config/schema';
import { takeEarlySignal } from './early-signals';

/**
 * How long a drain may run beyond SHUTDOWN_TIMEOUT (a startup still finishing, releasing claims and
 * the lease, closing pools) before the process exits 1 anyway.
 */
export const SHUTDOWN_GRACE_MS = 30_000;

/** The hard deadline of a process's shutdown: SHUTDOWN_TIMEOUT for in-flight work, then the grace. */
export function shutdownDeadlineMs(limits: { SHUTDOWN_TIMEOUT: number; graceMs?: number }): number {
  return Math.min(limits.SHUTDOWN_TIMEOUT + (limits.graceMs ?? SHUTDOWN_GRACE_MS), TIMER_MAX_MS);
}

/**
 * First SIGTERM/SIGINT: run `drain` (stop taking work, finish or release in-flight work, release
 * leases, close pools) and exit with its code. A second signal while draining forces exit 1
 * (graphile-worker's convention). A drain still running at the deadline (`shutdownDeadlineMs` of
 * `limits`: the process's configuration) exits 1 with an error line. Buffered trace spans are
 * flushed before the exit. A signal held since the process started (early-signals.ts) starts the
 * drain now. Returns a function that removes the handlers.
 */
export function onShutdownSignal(
  drain: (signal: NodeJS.Signals) => Promise<void>,
  logger: Logger,
  limits: { SHUTDOWN_TIMEOUT: number; graceMs?: number },
): () => void {
  const deadlineMs = shutdownDeadlineMs(limits);
  let draining = false;
  const handler = (signal: NodeJS.Signals) => {
    if (draining) {
      logger.warn({ signal }, 'second signal: forcing exit');
      process.exit(1);
    }
    draining = true;
    logger.info({ signal }, 'shutting down: draining');
    // a drain stuck on a peer that never answers (a black-holed database connection waits for TCP
    // keepalive, minutes) must not outlive the orchestrator's patience silently
    setTimeout(() => {
      logger.error(
        { deadlineMs },
        'shutdown did not finish in time: exiting now (claims left behind are recovered as stale by other workers, the lease expires)',
      );
      process.exit(1);
    }, deadlineMs); // not unref'd: a drain awaiting what nothing will settle must not end as a clean exit 0
    drain(signal).then(
      async () => {
        logger.info('shutdown complete');
        await shutdownTracing();
        process.exit(0);
      },
      async (err) => {
        logger.error({ err }, 'shutdown failed');
        await shutdownTracing();
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
  const early = takeEarlySignal();
  if (early) handler(early);
  return () => {
    process.off('SIGTERM', handler);
    process.off('SIGINT', handler);
  };
}
