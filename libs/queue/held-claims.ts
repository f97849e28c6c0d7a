import { performance } from 'node:perf_hooks';
import type { ClaimedJob } from './job-kind';
import type { Outcome } from './outcome';
import type { Decision } from './settlement';

/** Where a held claim is: its attempt running, its outcome being written, or given back at shutdown. */
export type Phase = 'running' | 'settling' | 'released';

export interface Held<Row> {
  job: ClaimedJob<Row>;
  ctl: AbortController;
  phase: Phase;
  /** performance.now() of the claim or of its last renewed heartbeat. */
  renewedAt: number;
}

/** A finished attempt, waiting for its outcome transaction. */
export interface Finished<Row, Effects> {
  job: ClaimedJob<Row>;
  outcome: Outcome<Effects>;
  decision: Decision<Effects>;
  startedAt: Date;
  finishedAt: Date;
  durationMs: number;
}

/**
 * The claims this worker holds, by claim id: the claim loop counts its free slots here, the claim
 * keeper heartbeats them, shutdown waits for them to drain.
 */
export class HeldClaims<Row> {
  private readonly byClaim = new Map<string, Held<Row>>();
  private drainWaiters: (() => void)[] = [];

  /** `onFreed` runs whenever a settled claim frees its slot. */
  constructor(private readonly onFreed: () => void) {}

  get size(): number {
    return this.byClaim.size;
  }

  add(job: ClaimedJob<Row>): Held<Row> {
    const h: Held<Row> = { job, ctl: new AbortController(), phase: 'running', renewedAt: performance.now() };
    this.byClaim.set(job.claimId, h);
    return h;
  }

  get(claimId: string): Held<Row> | undefined {
    return this.byClaim.get(claimId);
  }

  values(): IterableIterator<Held<Row>> {
    return this.byClaim.values();
  }

  /** Drops a claim without freeing a slot (released or given up at shutdown). */
  delete(claimId: string): void {
    this.byClaim.delete(claimId);
  }

  clear(): void {
    this.byClaim.clear();
  }

  /** The claim's outcome is written: its slot is free again. */
  free(claimId: string): void {
    this.byClaim.delete(claimId);
    this.onFreed();
    if (this.byClaim.size === 0) for (const w of this.drainWaiters.splice(0)) w();
  }

  /** True once no claim is held, false if `timeoutMs` passes first. */
  allDone(timeoutMs: number): Promise<boolean> {
    if (this.byClaim.size === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const t = setTimeout(() => resolve(false), Math.max(0, timeoutMs));
      this.drainWaiters.push(() => {
        clearTimeout(t);
        resolve(true);
      });
    });
  }

  /** Forgets whoever still waits for the drain (shutdown is over). */
  dropWaiters(): void {
    this.drainWaiters = [];
  }
}
