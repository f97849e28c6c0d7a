/**
 * Time as the engine sees it. Production passes no clock: then every comparison that matters across
 * replicas (is it due? is that claim stale?) uses the database's `now()`, so host clock skew cannot
 * make one replica steal another's live claims. Tests pass a `ManualClock` and every such comparison
 * uses its time instead, which makes backoff schedules and staleness testable without sleeping.
 */
export interface Clock {
  now(): Date;
}

/** A clock tests move by hand. */
export class ManualClock implements Clock {
  private t: number;
  constructor(start: Date | number = Date.now()) {
    this.t = typeof start === 'number' ? start : start.getTime();
  }
  now(): Date {
    return new Date(this.t);
  }
  advance(ms: number): Date {
    this.t += ms;
    return this.now();
  }
  set(to: Date | number): void {
    this.t = typeof to === 'number' ? to : to.getTime();
  }
}

/** The value to pass as `$now` to SQL: the injected clock's time, or null for the database's `now()`. */
export function sqlNow(clock: Clock | undefined): Date | null {
  return clock ? clock.now() : null;
}

/** The current time for values computed in this process (audit rows, Retry-After dates). */
export function jsNow(clock: Clock | undefined): Date {
  return clock ? clock.now() : new Date();
}
