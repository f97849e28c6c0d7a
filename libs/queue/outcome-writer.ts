import { errorCode } from '../errors';
import { backoffMs, type Backoff } from '../lifecycle/backoff';
import type { Logger } from '../observability/logger';
import { shortError } from './errors';

const MAX_BATCH = 500;
/** A batch that failed transiently (database down): deterministic doubling up to 5 s until it lands. */
const WRITE_RETRY: Backoff = { baseMs: 100, capMs: 5_000, jitter: 'none' };

/**
 * Group commit for outcomes: whatever finished while a write was running goes into the next
 * transaction, so a busy worker writes many outcomes per commit and an idle one writes at once. Up to
 * `maxWriters` transactions run at once (two keep the database busy while the other one commits).
 * A failed write (database down) is retried with backoff until it lands; the caller keeps its claim
 * (and heartbeat) until then, so an outcome is never dropped silently. `abandon()` (shutdown past its
 * timeout) gives up: such rows stay `delivering` and stale recovery hands them out again.
 *
 * Only failures that can pass are retried as a batch (`isTransientWriteError`: the connection, a
 * deadlock, a timeout). Any other failure (a value the database refuses, a kind's effect that
 * throws) belongs to some item of the batch: the batch is split and written item by item, so the
 * other items land at once; an item that still fails alone is replaced by `onUnwritable(item, err)`
 * (the engine makes it a terminal failure with the reason, without its effects) and written again;
 * if even that fails deterministically, the item is given up (logged; its claim goes stale and stale
 * recovery hands it out again, counting the attempt). One bad item never blocks the batch or the worker.
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
    private readonly opts: {
      /** Retry the same batch (default: isTransientWriteError). */
      isTransient?: (err: unknown) => boolean;
      /** What to write instead of an item that cannot be written (undefined: give it up). */
      onUnwritable?: (item: T, err: unknown) => T | undefined;
    } = {},
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
      try {
        await this.writeIsolating(batch.map((b) => b.item));
      } catch (err) {
        // unreachable by construction; an outcome writer must never stop writing
        this.logger.error({ err: { message: shortError(err) } }, 'outcome writer failed unexpectedly');
      }
      for (const b of batch) b.done();
    }
  }

  /** Writes `items`; resolves once they landed, were isolated and failed, or the writer was abandoned. */
  private async writeIsolating(items: T[], replaced = false): Promise<void> {
    const transient = this.opts.isTransient ?? isTransientWriteError;
    let failures = 0;
    for (;;) {
      try {
        await this.write(items);
        return;
      } catch (err) {
        if (this.abandoned) return;
        if (transient(err)) {
          failures++;
          this.logger.warn(
            { err: { message: shortError(err), code: errorCode(err) }, failures, outcomes: items.length },
            'writing outcomes failed; retrying',
          );
          await this.pause(backoffMs(WRITE_RETRY, failures));
          if (this.abandoned) return;
          continue;
        }
        if (items.length > 1) {
          this.logger.warn(
            { err: { message: shortError(err), code: errorCode(err) }, outcomes: items.length },
            'writing outcomes failed on some item; writing them one by one',
          );
          for (const item of items) {
            if (this.abandoned) return;
            await this.writeIsolating([item]);
          }
          return;
        }
        const [item] = items as [T];
        const instead = replaced ? undefined : this.opts.onUnwritable?.(item, err);
        if (instead === undefined) {
          this.logger.error(
            { err: { message: shortError(err), code: errorCode(err) } },
            'an outcome cannot be written; giving it up (stale recovery will hand its item out again)',
          );
          return;
        }
        this.logger.warn(
          { err: { message: shortError(err), code: errorCode(err) } },
          'an outcome cannot be written; failing its item with the reason',
        );
        return this.writeIsolating([instead], true);
      }
    }
  }
}

/** SQLSTATE classes of failures that can pass by themselves: connection, resources, operator intervention, serialization/deadlock. */
const TRANSIENT_SQLSTATE_CLASSES = new Set(['08', '40', '53', '57', '58', 'HV']);
const TRANSIENT_SQLSTATES = new Set(['55P03', '55006', '25P04']);

/**
 * True for write failures that retrying the same batch can fix: the database unreachable or
 * restarting, a dropped connection, a pool or statement timeout, a deadlock or serialization
 * failure. False for everything that belongs to the data (a value refused, a constraint, an error a
 * kind's effect threw): those are isolated instead of retried forever.
 */
export function isTransientWriteError(err: unknown): boolean {
  const code = errorCode(err);
  if (code !== undefined) {
    if (/^E[A-Z0-9_]{3,}$/.test(code)) return true; // ECONNREFUSED, ECONNRESET, ETIMEDOUT, EPIPE, ENOTFOUND…
    if (/^[0-9A-Z]{5}$/.test(code))
      return TRANSIENT_SQLSTATE_CLASSES.has(code.slice(0, 2)) || TRANSIENT_SQLSTATES.has(code);
    return false; // our own codes (RELAY_…) and anything else with a code: about the data
  }
  // node-postgres / pg-pool connection failures carry no code; match their fixed wording only (never
  // a pattern that text coming from an item could hit by chance)
  const message = err instanceof Error ? err.message : '';
  const lower = message.toLowerCase();
  return PG_CONNECTION_MESSAGES.some((m) => lower.startsWith(m.toLowerCase()));
}

const PG_CONNECTION_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error and is not queryable',
  'Client was closed and is not queryable',
  'Cannot use a pool after calling end on the pool',
  'Query read timeout',
  'connect ECONNREFUSED',
];
