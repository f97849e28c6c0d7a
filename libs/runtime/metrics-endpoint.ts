/**
 * METRICS_PORT for a process: one registry (Node defaults + what the components register) and one
 * HTTP endpoint, started before the components so a port clash fails the start at once and
 * liveness answers during startup. Unset METRICS_PORT: nothing is created, nothing listens.
 */
import type { Registry } from 'prom-client';
import type { Config } from '../config';
import type { Logger } from '../observability/logger';
import { createProcessRegistry } from '../observability/metrics';
import { MetricsServer, startMetricsServer } from '../observability/metrics-server';

export interface MetricsEndpoint {
  registry: Registry;
  server: MetricsServer;
}

export async function startMetricsEndpoint(
  config: Pick<Config, 'METRICS_PORT' | 'METRICS_HOST'>,
  logger: Logger,
): Promise<MetricsEndpoint | undefined> {
  if (config.METRICS_PORT === undefined) return undefined;
  const registry = createProcessRegistry();
  const server = await startMetricsServer({ host: config.METRICS_HOST, port: config.METRICS_PORT, registry });
  logger.info(
    { address: server.address, paths: ['/metrics', '/health/live', '/health/ready'] },
    'metrics endpoint listening',
  );
  return { registry, server };
}
