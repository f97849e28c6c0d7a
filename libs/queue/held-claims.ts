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
  /** It takes one of the worker's attempt slots (until its attempt ends or, on its own transaction, its outcome is written). */
  slot: boolean;
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
 * keeper heartbeats them, shutdown waits for them to drain. A claim is held until its outcome is
 * written; it takes an attempt slot only while its attempt runs (and, on the attempt's own
 * transaction, until that commits: it holds a connection), so the next attempts start while
 * finished ones wait for their group commit.
 */
export class HeldClaims<Row> {
  private readonly byClaim = new Map<string, Held<Row>>();
  private drainWaiters: (() => void)[] = [];
  private slots = 0;

  /** `onFreed` runs whenever a slot is freed. */
  constructor(private readonly onFreed: () => void) {}

  /** Claims held: running, waiting for their outcome, or both. */
  get size(): number {
    return this.byClaim.size;
  }

  /** Attempt slots taken. */
  get running(): number {
    return this.slots;
  }

  add(job: ClaimedJob<Row>): Held<Row> {
    const h: Held<Row> = {
      job,
      ctl: new AbortController(),
      phase: 'running',
      renewedAt: performance.now(),
      slot: true,
    };
    this.byClaim.set(job.claimId, h);
    this.slots++;
    return h;
  }

  /** The claim's attempt no longer needs its slot; the claim stays held until `free`. */
  releaseSlot(claimId: string): void {
    const h = this.byClaim.get(claimId);
    if (!h?.slot) return;
    h.slot = false;
    this.slots--;
    this.onFreed();
  }

  get(claimId: string): Held<Row> | undefined {
    return this.byClaim.get(claimId);
  }

  values(): IterableIterator<Held<Row>> {
    return this.byClaim.values();
  }

  /** Drops a claim without telling the loop (released or given up at shutdown). */
  delete(claimId: string): void {
    if (this.byClaim.get(claimId)?.slot) this.slots--;
    this.byClaim.delete(claimId);
  }

  clear(): void {
    this.byClaim.clear();
    this.slots = 0;
  }

  /** The claim's outcome is written: it is no longer held. */
  free(claimId: string): void {
    this.delete(claimId);
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
