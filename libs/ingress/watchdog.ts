/**
 * The poller's stall detector.
 *
 * Progress = a committed batch, a recorded empty long poll, or a fresh lease; a batch transaction
 * that failed with an error restarts the window too (the database is down: a restart would not
 * help, readiness says so). The watchdog trips
 * when the owning generation made none for watchdogMs while Telegram is known to hold updates
 * (a non-empty getUpdates answer not yet committed). It ends the poller with `stalled` at once,
 * without waiting for the loop (which may be stuck on an await that never settles, e.g. a
 * frozen database connection): the process exits non-zero and its supervisor restarts it, and
 * meanwhile a hot standby takes over (the lease is released if the database answers, else it
 * expires within LEASE_TTL). An in-process "drop the lease and re-acquire" cannot unwind a hung
 * await, so it would not recover the cases this exists for.
 */
import { every, Ticker } from '../lifecycle/timers';
import type { Logger } from '../observability/logger';

export interface WatchdogOptions {
  /** No progress for this long while updates wait is a stall; null turns the watchdog off. */
  watchdogMs: number | null;
  now: () => number;
  logger: Logger;
  /** Whether the poller owns the lease and polls (not halted, not stopping): only then can it stall. */
  watching: () => boolean;
  /** Where the poller is, for the fatal line. */
  where: () => { generation: number | undefined; offset: number | null };
  /** Called once, when it trips (the watchdog has stopped itself by then). */
  onStall: (message: string) => void;
}

export class Watchdog {
  private lastProgressAt: number;
  private updatesWaitingSince: number | null = null;
  private lastTickAt: number;
  private ticker: Ticker | null = null;
  private readonly tickMs: number;

  constructor(private readonly o: WatchdogOptions) {
    this.lastProgressAt = o.now();
    this.tickMs = o.watchdogMs === null ? 0 : Math.max(50, Math.min(1_000, Math.floor(o.watchdogMs / 4)));
    this.lastTickAt = o.now();
  }

  start(): void {
    if (this.o.watchdogMs === null) return;
    this.lastTickAt = this.o.now();
    this.ticker = every(this.tickMs, () => this.check(), {
      unref: true,
      onError: (err) => this.o.logger.error({ err }, 'poller watchdog check failed'),
    });
  }

  stop(): void {
    void this.ticker?.stop();
    this.ticker = null;
  }

  /** The generation made progress (see above): a new window, and no updates known to wait. */
  progressed(): void {
    this.lastProgressAt = this.o.now();
    this.updatesWaitingSince = null;
  }

  /**
   * A batch transaction that failed with an error came back: the loop is alive and backing off
   * (the database is down or restarting), which a new process would not fix and readiness already
   * reports. It restarts the window; only an await that never settles trips the watchdog.
   */
  settledWithError(): void {
    this.lastProgressAt = this.o.now();
  }

  /** getUpdates answered updates that are not committed yet. */
  updatesWaiting(): void {
    this.updatesWaitingSince ??= this.o.now();
  }

  private check(): void {
    const { now, watchdogMs } = this.o;
    const tickAt = now();
    const gap = tickAt - this.lastTickAt;
    this.lastTickAt = tickAt;
    // A late tick means this process was suspended (SIGSTOP, VM pause) or its event loop blocked:
    // not a stall of its own. Give the loop a full window from now (a hung await does not delay ticks).
    if (gap > 3 * this.tickMs + 1_000) {
      this.lastProgressAt = Math.max(this.lastProgressAt, tickAt);
      return;
    }
    if (watchdogMs === null || !this.o.watching() || this.updatesWaitingSince === null) return;
    const idleMs = now() - this.lastProgressAt;
    if (idleMs < watchdogMs) return;
    const { generation, offset } = this.o.where();
    const message =
      `poller watchdog: generation ${generation ?? '?'} made no progress for ${idleMs} ms ` +
      `(limit ${watchdogMs} ms: 2 × POLL_TIMEOUT, at least the database connect timeout + 2 s) while Telegram holds updates; exiting so the supervisor restarts it`;
    this.o.logger.fatal({ idleMs, watchdogMs, offset, updatesWaitingMs: now() - this.updatesWaitingSince }, message);
    this.stop();
    this.o.onStall(message);
  }
}
