/**
 * In-process wake-ups along a reply's path, for components that share a process. Each commit on the
 * path already sends a NOTIFY (other processes and replicas still rely on it); a loop of the same
 * process is woken here directly, without waiting for the notification to travel to PostgreSQL and
 * back over the LISTEN connection. A wake only makes a claim loop claim now: the rows still go
 * through the same claim statement, so order, rate limits and fencing are those of the claim.
 */
import { QUEUES } from '../db/boss';
import type { Worker } from '../queue';

/** Wakes the claim loop of `queue` in `worker`, if it runs one. */
export function wakeQueue(worker: Pick<Worker, 'kinds'>, queue: string): void {
  for (const k of worker.kinds) if (k.queue === queue) k.wake();
}

/**
 * An update's outcome landed (its relayed replies are committed with it): the outbound loop of the
 * same worker claims at once. Returns the unsubscribe.
 */
export function wakeOutboundOnDispatch(worker: Pick<Worker, 'kinds' | 'events'>): () => void {
  if (!worker.kinds.some((k) => k.queue === QUEUES.outbound)) return () => undefined;
  return worker.events.on('settled', (e) => {
    if (e.queue === QUEUES.dispatch && e.state === 'delivered') wakeQueue(worker, QUEUES.outbound);
  });
}
