/**
 * In-process shortcuts along a reply's path, for components that share a process. Each commit on
 * the path already sends a NOTIFY (other processes and replicas still rely on it); a loop of the
 * same process is woken here directly, without waiting for the notification to travel to
 * PostgreSQL and back over the LISTEN connection. A wake only makes a claim loop claim now, and the
 * reply handoff claims with the outbound claim's own rules (restricted to the replies' rows), so
 * order, rate limits and fencing are those of the claim.
 */
import type { PoolClient } from 'pg';
import { QUEUES } from '../db/boss';
import type { KindWorker, Worker } from '../queue';
import { notifyWork } from '../queue/enqueue';

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

/**
 * A handled update's replies, claimed for the outbound worker of the same process in the outcome
 * transaction that writes them and sent as soon as it commits (KindWorker.claimIn): no commit of a
 * claim of their own and no wake on their way. Made before the worker (dispatch needs it), attached
 * to the outbound loop after; until then, and without one, replies wait for the outbound claim.
 */
export function replyHandoff(): {
  send: (db: PoolClient, msgIds: readonly string[]) => Promise<void>;
  /** Attaches the outbound loop of `worker`; false if it runs none. */
  attach(worker: Pick<Worker, 'kinds'>): boolean;
} {
  let outbound: KindWorker | undefined;
  return {
    // the replies were enqueued without a NOTIFY (the dispatch kind's reply writer leaves it here):
    // replies claimed here need no replica woken, the others do (no outbound loop attached, no
    // free slot, a row behind its chat's head); the NOTIFY goes out with the commit
    send: async (db, msgIds) => {
      const claimed = outbound ? await outbound.claimIn(db, msgIds) : 0;
      if (claimed < msgIds.length) await notifyWork(db, QUEUES.outbound);
    },
    attach(worker) {
      outbound = worker.kinds.find((k) => k.queue === QUEUES.outbound);
      return outbound !== undefined;
    },
  };
}
