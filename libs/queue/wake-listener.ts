import { Client } from 'pg';
import type { Logger } from '../observability/logger';
import { backoffMs } from '../lifecycle/backoff';
import { WORK_CHANNEL } from './enqueue';
import { errorMessage } from '../errors';

export interface WakeListener {
  /**
   * Calls `fn` on every NOTIFY for `queue` (`*`: every NOTIFY on the channel), and after every
   * (re)connect (notifications may have been missed).
   */
  subscribe(queue: string, fn: () => void): () => void;
  start(): Promise<void>;
  stop(): Promise<void>;
  readonly connected: boolean;
}

/** Spaced, not spread: every reconnect wakes every claim loop of the process. */
const RECONNECT_BACKOFF = { baseMs: 100, capMs: 5_000, jitter: 'equal' } as const;
/**
 * A connection counts as healthy again (the backoff starts over) only after staying up this long:
 * one dropped right after LISTEN (a pooler, a tiny idle_session_timeout) would otherwise be
 * re-made every 100 ms, waking every claim loop each time.
 */
const STABLE_AFTER_MS = 10_000;

/**
 * A dedicated LISTEN connection (a pooled connection cannot hold LISTEN). Enqueueing transactions
 * `pg_notify(WORK_CHANNEL, queue)`, so idle workers wake when the work commits rather than on
 * their next poll. The connection reconnects with backoff after an error or a database restart;
 * meanwhile the claim loop's slow poll still finds work, so nothing depends on a notification.
 */
export function createWakeListener(opts: {
  url: string;
  logger: Logger;
  channel?: string;
  applicationName?: string;
}): WakeListener {
  const channel = opts.channel ?? WORK_CHANNEL;
  const subscribers = new Map<string, Set<() => void>>();
  let client: Client | undefined;
  let stopped = false;
  let connected = false;
  let retryTimer: NodeJS.Timeout | undefined;
  let failures = 0;

  const fire = (queue?: string) => {
    for (const [q, fns] of subscribers) if (queue === undefined || q === queue || q === '*') for (const fn of fns) fn();
  };

  const scheduleReconnect = () => {
    if (stopped || retryTimer) return;
    failures++;
    const delay = backoffMs(RECONNECT_BACKOFF, failures);
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      void connect();
    }, delay);
    retryTimer.unref?.();
  };

  const connect = async (): Promise<void> => {
    if (stopped) return;
    const c = new Client({
      connectionString: opts.url,
      application_name: opts.applicationName ?? 'tg-relay:listen',
      keepAlive: true,
      connectionTimeoutMillis: 5_000,
      // the LISTEN statement itself: one that never answers is treated as a lost connection
      query_timeout: 10_000,
    });
    let lost = false;
    let connectedAt: number | undefined = undefined; // set once LISTEN runs (read by onLost before that)
    const onLost = (err?: Error) => {
      if (lost) return;
      lost = true;
      connected = false;
      if (connectedAt !== undefined && Date.now() - connectedAt >= STABLE_AFTER_MS) failures = 0;
      if (client === c) client = undefined;
      if (!stopped) opts.logger.warn({ err }, 'work listener lost its connection; reconnecting');
      c.end().catch(() => undefined);
      scheduleReconnect();
    };
    c.on('error', onLost);
    c.on('end', () => onLost());
    c.on('notification', (msg) => {
      if (msg.channel === channel) fire(msg.payload || undefined);
    });
    try {
      await c.connect();
      await c.query(`listen ${c.escapeIdentifier(channel)}`);
    } catch (err) {
      if (!lost) {
        lost = true;
        c.end().catch(() => undefined);
        if (!stopped)
          opts.logger.warn({ err: { message: errorMessage(err) } }, 'work listener cannot connect; retrying');
        scheduleReconnect();
      }
      return;
    }
    if (stopped || lost) {
      c.end().catch(() => undefined);
      return;
    }
    client = c;
    connected = true;
    connectedAt = Date.now();
    if (failures > 0) opts.logger.info('work listener reconnected');
    fire(); // anything committed while we were not listening
  };

  return {
    get connected() {
      return connected;
    },
    subscribe(queue, fn) {
      let set = subscribers.get(queue);
      if (!set) subscribers.set(queue, (set = new Set()));
      set.add(fn);
      return () => set.delete(fn);
    },
    async start() {
      stopped = false;
      await connect();
    },
    async stop() {
      stopped = true;
      if (retryTimer) clearTimeout(retryTimer);
      retryTimer = undefined;
      const c = client;
      client = undefined;
      connected = false;
      if (c) await c.end().catch(() => undefined);
    },
  };
}
