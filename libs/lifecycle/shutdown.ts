import type { Logger } from '../observability/logger';
import { shutdownTracing } from '../observability/tracing';

/**
 * First SIGTERM/SIGINT: run `drain` (stop taking work, finish or release in-flight work, release
 * leases, close pools) and exit with its code. A second signal while draining forces exit 1
 * (graphile-worker's convention). Buffered trace spans are flushed before the exit. Returns a function that removes the handlers.
 */
export function onShutdownSignal(drain: (signal: NodeJS.Signals) => Promise<void>, logger: Logger): () => void {
  let draining = false;
  const handler = (signal: NodeJS.Signals) => {
    if (draining) {
      logger.warn({ signal }, 'second signal: forcing exit');
      process.exit(1);
    }
    draining = true;
    logger.info({ signal }, 'shutting down: draining');
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
  return () => {
    process.off('SIGTERM', handler);
    process.off('SIGINT', handler);
  };
}
