/**
 * A tiny typed event emitter, after graphile-worker's `WorkerEventMap`: a component says what
 * happened (a claim, a settled attempt, a committed batch) and observers such as the metrics
 * subscribe, so the component's dependencies need not carry every observer.
 *
 * Emitting is synchronous and never fails the emitter: a listener that throws is reported to
 * `onListenerError` and the remaining listeners still run. An observer's bug must not break a claim,
 * a settle or a batch it only watches.
 */
import type { Logger } from '../observability/logger';

export type Listener<E> = (event: E) => void;

export class Events<M extends object> {
  private readonly listeners = new Map<keyof M, Set<Listener<never>>>();

  constructor(private readonly onListenerError: (err: unknown, event: keyof M) => void) {}

  /** Subscribes `listener` to `event`; returns the unsubscribe. */
  on<K extends keyof M>(event: K, listener: Listener<M[K]>): () => void {
    let set = this.listeners.get(event);
    if (!set) this.listeners.set(event, (set = new Set()));
    const l = listener as Listener<never>;
    set.add(l);
    return () => void set.delete(l);
  }

  emit<K extends keyof M>(event: K, payload: M[K]): void {
    const set = this.listeners.get(event);
    if (!set) return;
    for (const l of [...set]) {
      try {
        (l as Listener<M[K]>)(payload);
      } catch (err) {
        try {
          this.onListenerError(err, event);
        } catch {
          // the reporter itself failed: still nothing may reach the emitter
        }
      }
    }
  }
}

/**
 * Logs a throwing listener once per event name (a broken observer would otherwise log on every
 * claim or attempt) and keeps going. The logger's own fields say whose events they are.
 */
export function logListenerErrors(logger: Logger): (err: unknown, event: PropertyKey) => void {
  const reported = new Set<PropertyKey>();
  return (err, event) => {
    if (reported.has(event)) return;
    reported.add(event);
    logger.error(
      { err, event: String(event) },
      'an observer of this event threw; the work it watched went on (later throws of it are not logged)',
    );
  };
}
