/**
 * Failure modes of the collector sandbox, decided per capture call (seedable RNG) in this order:
 * drop, unavailable (503), timeout, reject (4xx), slow. `failNext` scripts the next N calls.
 */
import type { Rng } from './rng';

export type CollectorFaultMode =
  /** 503, optionally with Retry-After. Not recorded. */
  | 'unavailable'
  /** Hold the request `timeoutMs` (0 = until the client gives up or the collector stops), then 504. Not recorded. */
  | 'timeout'
  /** `rejectStatus` (default 422). Not recorded. */
  | 'reject'
  /** Destroy the connection without an answer. Not recorded. */
  | 'drop'
  /** Record the capture, then answer 200 only after `slowMs`: a client with a shorter timeout retries → duplicate. */
  | 'slow';

export interface CollectorFaults {
  unavailableRate?: number;
  /** Retry-After seconds sent with 503s. */
  retryAfterSeconds?: number;
  timeoutRate?: number;
  timeoutMs?: number;
  rejectRate?: number;
  rejectStatus?: number;
  dropRate?: number;
  slowRate?: number;
  slowMs?: number;
  /** Added latency on every call, ms. */
  latencyMs?: number;
  /** Force the next `count` calls into `mode` (before any rate applies). */
  failNext?: { count: number; mode: CollectorFaultMode };
}

const MODES: CollectorFaultMode[] = ['unavailable', 'timeout', 'reject', 'drop', 'slow'];

export function validateCollectorFaults(f: CollectorFaults): CollectorFaults {
  for (const key of ['unavailableRate', 'timeoutRate', 'rejectRate', 'dropRate', 'slowRate'] as const) {
    const v = f[key];
    if (v !== undefined && !(typeof v === 'number' && v >= 0 && v <= 1))
      throw new Error(`${key} must be between 0 and 1`);
  }
  if (f.rejectStatus !== undefined && !(f.rejectStatus >= 400 && f.rejectStatus <= 499)) {
    throw new Error('rejectStatus must be a 4xx status');
  }
  if (f.failNext) {
    if (!Number.isInteger(f.failNext.count) || f.failNext.count < 0)
      throw new Error('failNext.count must be an integer >= 0');
    if (!MODES.includes(f.failNext.mode)) throw new Error(`failNext.mode must be one of ${MODES.join(', ')}`);
  }
  return { ...f, failNext: f.failNext ? { ...f.failNext } : undefined };
}

export function decideCollectorFault(f: CollectorFaults | null, rng: Rng): CollectorFaultMode | null {
  if (!f) return null;
  if (f.failNext && f.failNext.count > 0) {
    f.failNext.count--;
    return f.failNext.mode;
  }
  if (f.dropRate && rng() < f.dropRate) return 'drop';
  if (f.unavailableRate && rng() < f.unavailableRate) return 'unavailable';
  if (f.timeoutRate && rng() < f.timeoutRate) return 'timeout';
  if (f.rejectRate && rng() < f.rejectRate) return 'reject';
  if (f.slowRate && rng() < f.slowRate) return 'slow';
  return null;
}
