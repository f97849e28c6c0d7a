/**
 * Times the ingress batch transaction around `persistBatch` for its callers (the poller and the
 * webhook handler) and tells observers how it ended; persist-batch.ts itself stays untouched.
 */
import { performance } from 'node:perf_hooks';
import { LeaseLostError } from './errors';
import type { IngressEvents, IngressTransport } from './events';
import type { PersistResult } from './persist-batch';

/** Runs `persist` and emits `batch` with its duration and result (committed, fenced or error). */
export async function timedPersist(
  events: IngressEvents,
  transport: IngressTransport,
  persist: () => Promise<PersistResult>,
): Promise<PersistResult> {
  const t0 = performance.now();
  let r: PersistResult;
  try {
    r = await persist();
  } catch (err) {
    const result = err instanceof LeaseLostError ? 'fenced' : 'error';
    events.emit('batch', { transport, result, durationMs: performance.now() - t0 });
    throw err;
  }
  events.emit('batch', {
    transport,
    result: 'committed',
    durationMs: performance.now() - t0,
    stored: r.stored,
    duplicates: r.duplicates,
    quarantined: r.quarantined,
    captureConflicts: r.captureConflicts.length,
  });
  return r;
}
