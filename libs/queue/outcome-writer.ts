import type { Logger } from '../observability/logger';

const MAX_BATCH = 500;
const RETRY_MIN_MS = 100;
const RETRY_MAX_MS = 5_000;

/**
 * Group commit for outcomes: whatever finished while a write was running goes into the next
 * transaction, so a busy worker writes many outcomes per commit and an idle one writes at once. Up to
 * `maxWriters` transactions run at once (two keep the database busy while the other one commits).
 * A failed write (database down) is retried with backoff until it lands; the caller keeps its claim
 * (and heartbeat) until then, so an outcome is never dropped silently. `abandon()` (shutdown past its
 * timeout) gives up: such rows stay `delivering` and stale recovery hands them out again.
 */
export class OutcomeWriter<T> {
  private queue: { item: T; done: () => void }[] = [];
  private active = 0;
  private scheduled = false;
  private abandoned = false;
  private idleWaiters: (() => void)[] = [];
  private onAbandon: (() => void)[] = [];

  constructor(
    private readonly write: (batch: T[]) => Promise<void>,
    private readonly logger: Logger,
    private readonly maxWriters = 2,
  ) {}

  /** Resolves once the item is committed (or abandoned). Never rejects. */
  submit(item: T): Promise<void> {
    return new Promise((done) => {
      if (this.abandoned) return done();
      this.queue.push({ item, done });
      if (!this.scheduled && this.active < this.maxWriters) {
        this.scheduled = true;
        // let outcomes that finish in this same turn of the event loop join the batch
        setImmediate(() => {
          this.scheduled = false;
          this.spawn();
        });
      }
    });
  }

  get pending(): number {
    return this.queue.length;
  }

  /** Resolves when nothing is queued or being written. */
  idle(): Promise<void> {
    if (this.active === 0 && this.queue.length === 0) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  abandon(): void {
    this.abandoned = true;
    for (const f of this.onAbandon.splice(0)) f();
    if (this.active === 0) this.finish();
  }

  private spawn(): void {
    if (this.queue.length > 0 && this.active < this.maxWriters && !this.abandoned) {
      this.active++;
      void this.drain().finally(() => {
        this.active--;
        if (this.queue.length > 0 && !this.abandoned) this.spawn();
        else if (this.active === 0) this.finish();
      });
    }
  }

  private finish(): void {
    if (this.abandoned) for (const b of this.queue.splice(0)) b.done();
    if (this.active === 0 && this.queue.length === 0) for (const w of this.idleWaiters.splice(0)) w();
  }

  /** Sleeps `ms`, or less if abandon() is called meanwhile. */
  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        this.onAbandon = this.onAbandon.filter((f) => f !== wake);
        resolve();
      }, ms);
      this.onAbandon.push(wake);
    });
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0 && !this.abandoned) {
      const batch = this.queue.splice(0, MAX_BATCH);
      let failures = 0;
      for (;;) {
        try {
          await this.write(batch.map((b) => b.item));
          break;
        } catch (err) {
          if (this.abandoned) break;
          failures++;
          this.logger.warn({ err, failures, outcomes: batch.length }, 'writing outcomes failed; retrying');
          await this.pause(Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** Math.min(failures - 1, 8)));
          if (this.abandoned) break;
        }
      }
      for (const b of batch) b.done();
    }
  }
}
