/** Waiting, for every loop and client in the relay: one implementation, so each behaves the same. */
import { TIMER_MAX_MS } from '../config/schema';

/**
 * Resolves after `ms`, or at once when `signal` aborts (never rejects: the caller checks
 * `signal.aborted`). `unref`: the wait does not keep the process alive (a fault's delay).
 */
export function sleep(ms: number, signal?: AbortSignal, opts: { unref?: boolean } = {}): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted || ms <= 0) {
      resolve();
      return;
    }
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    if (opts.unref) timer.unref();
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** `p`, or a rejection naming `what` once `ms` have passed (a peer that never answers must not hang us). */
export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
    }),
  ]);
}

/**
 * `p`, but given up on (resolving) after `ms`: a dying process waits this long for its parts to stop,
 * and no longer (a stuck part must not keep it alive). A rejection of `p` in time still rejects.
 */
export async function waitAtMost(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([p, new Promise((r) => (timer = setTimeout(r, ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** How `every` runs its ticks. */
export interface EveryOptions {
  /** Stops the ticking when aborted; a tick under way is not interrupted (`done` waits for it). */
  signal?: AbortSignal;
  /** The timer does not keep the process alive. */
  unref?: boolean;
  /**
   * Each wait is `ms` × (1 ± jitter), 0 ≤ jitter < 1: replicas started together do not all wake at
   * the same instant. Default 0.
   */
  jitter?: number;
  /**
   * `start` (default): a tick is due every `ms` after the previous one was due, and one due while
   * the previous tick still runs is skipped (never queued). `end`: the next wait begins when a tick
   * has ended, so slow ticks push the next one back.
   */
  from?: 'start' | 'end';
  /** The first tick runs now instead of after the first wait. */
  immediate?: boolean;
  /** Where a tick's throw or rejection goes; the ticking goes on. */
  onError: (err: unknown) => void;
  /** The random draw of the jitter (tests). */
  random?: () => number;
}

export interface Ticker {
  /** Stops ticking (idempotent); resolves once a tick under way has ended. */
  stop(): Promise<void>;
  /** Resolves once stopped (by stop() or the signal) and no tick runs: a Lifecycle body. */
  readonly done: Promise<void>;
}

/** One wait of `every`: `ms` × (1 ± jitter), at least 1 ms, at most what a Node timer holds. */
export function jitteredMs(ms: number, jitter: number, random: () => number = Math.random): number {
  return Math.min(TIMER_MAX_MS, Math.max(1, Math.round(ms * (1 - jitter + 2 * jitter * random()))));
}

/**
 * Runs `tick` periodically, one tick at a time: the one periodic timer of the relay (heartbeats,
 * lease renewal, keep-alives, health logs, watchdogs, pruning), so overlap, errors and stopping
 * behave the same everywhere. A tick that returns synchronously is over when it returns; one that
 * returns a promise runs until it settles.
 */
export function every(ms: number, tick: () => unknown, opts: EveryOptions): Ticker {
  const jitter = opts.jitter ?? 0;
  if (!(ms > 0 && ms <= TIMER_MAX_MS))
    throw new RangeError(`every: the period must be in (0, ${TIMER_MAX_MS}] ms, got ${ms}`);
  if (!(jitter >= 0 && jitter < 1)) throw new RangeError(`every: the jitter must be in [0, 1), got ${jitter}`);
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  let resolveDone!: () => void;
  const done = new Promise<void>((resolve) => (resolveDone = resolve));
  const report = (err: unknown): void => {
    try {
      opts.onError(err);
    } catch {
      // an error handler that throws must not end the ticking nor leave `done` unresolved
    }
  };

  const run = (): Promise<void> | undefined => {
    let result: unknown;
    try {
      result = tick();
    } catch (err) {
      report(err);
      return undefined;
    }
    if (!(result instanceof Promise)) return undefined;
    running = result.then(() => undefined, report);
    void running.finally(() => (running = undefined));
    return running;
  };
  const arm = (): void => {
    if (stopped) return;
    timer = setTimeout(fire, jitteredMs(ms, jitter, opts.random));
    if (opts.unref) timer.unref();
  };
  function fire(): void {
    timer = undefined;
    if (opts.from === 'end') {
      const ran = run();
      if (ran) void ran.then(arm);
      else arm();
      return;
    }
    arm();
    if (!running) void run();
  }
  const halt = (): void => {
    if (stopped) return;
    stopped = true;
    clearTimeout(timer);
    opts.signal?.removeEventListener('abort', halt);
    void Promise.resolve(running).then(resolveDone);
  };
  const stop = (): Promise<void> => {
    halt();
    return done;
  };

  if (opts.signal?.aborted) halt();
  else {
    opts.signal?.addEventListener('abort', halt, { once: true });
    if (opts.immediate) fire();
    else arm();
  }
  return { stop, done };
}
