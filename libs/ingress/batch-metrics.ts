/**
 * METRICS_PORT instrumentation of the ingress batch transaction, measured around `persistBatch`
 * by its callers (the poller and the webhook handler); persist-batch.ts itself stays untouched.
 */
import { performance } from 'node:perf_hooks';
import type { IngressMetrics } from '../observability/metrics';
import { LeaseLostError } from './errors';
import type { PersistResult } from './persist-batch';

/** Runs `persist` and records its duration (committed, fenced or error) and the updates it committed. */
export async function measuredPersist(
  metrics: IngressMetrics | undefined,
  transport: 'polling' | 'webhook',
  persist: () => Promise<PersistResult>,
): Promise<PersistResult> {
  if (!metrics) return persist();
  const t0 = performance.now();
  try {
    const r = await persist();
    metrics.batchDuration.observe({ transport, result: 'committed' }, (performance.now() - t0) / 1000);
    if (r.stored) metrics.updates.inc({ transport, result: 'stored' }, r.stored);
    if (r.duplicates) metrics.updates.inc({ transport, result: 'duplicate' }, r.duplicates);
    if (r.quarantined) metrics.updates.inc({ transport, result: 'quarantined' }, r.quarantined);
    if (r.captureConflicts.length)
      metrics.updates.inc({ transport, result: 'capture_conflict' }, r.captureConflicts.length);
    return r;
  } catch (err) {
    metrics.batchDuration.observe(
      { transport, result: err instanceof LeaseLostError ? 'fenced' : 'error' },
      (performance.now() - t0) / 1000,
    );
    throw err;
  }
}
