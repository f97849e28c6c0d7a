import { Pool, PoolClient, PoolConfig } from 'pg';
import { commit, transactionEnded } from './transaction-end';

export type { Pool, PoolClient };

/** Anything that runs a parameterized query: a Pool or a client inside a transaction. */
export interface Queryable {
  query: Pool['query'];
}

/**
 * Server-side limits every session of ours runs under (milliseconds; 0 turns one off). They are
 * what keeps a dead or frozen client from holding the cursor row lock (or any other) for hours:
 * PostgreSQL itself ends a transaction left idle, a statement that runs away, and a lock wait.
 * Migrations and bulk jobs pass their own (0 = none) for their legitimately long statements.
 */
export interface DbTimeouts {
  statementMs: number;
  lockMs: number;
  idleInTransactionMs: number;
}
export const DB_STATEMENT_TIMEOUT_MS_DEFAULT = 30_000;
export const DB_LOCK_TIMEOUT_MS_DEFAULT = 10_000;
export const DB_IDLE_IN_TRANSACTION_TIMEOUT_MS_DEFAULT = 30_000;
/** TCP keepalive: first probe after this much idle time, so a vanished peer is noticed by the OS. */
export const DB_KEEPALIVE_DELAY_MS = 10_000;
/**
 * Beyond the server's own statement_timeout, how long the client waits for a query's answer before
 * it takes the connection for dead (`pg`'s query_timeout). Keepalive cannot notice a black-holed path
 * while a query is unanswered (the kernel retransmits for ~15 minutes first); this does, and the pool
 * drops that connection and opens a new one. Sessions without a statement limit (migrations) get none.
 */
export const DB_CLIENT_GRACE_MS = 5_000;
/** The error `pg` rejects a query with when its query_timeout passes. */
const QUERY_READ_TIMEOUT = 'Query read timeout';
export const DB_TIMEOUTS_DEFAULT: DbTimeouts = {
  statementMs: DB_STATEMENT_TIMEOUT_MS_DEFAULT,
  lockMs: DB_LOCK_TIMEOUT_MS_DEFAULT,
  idleInTransactionMs: DB_IDLE_IN_TRANSACTION_TIMEOUT_MS_DEFAULT,
};

/**
 * How connections reach PostgreSQL (DB_POOL_MODE, docs/pgbouncer.md). `session`: each connection is
 * one server session for its whole life (direct, or PgBouncer pool_mode=session). `transaction`: a
 * transaction pooler (PgBouncer pool_mode=transaction) lends a server session per transaction, so
 * nothing may outlive a transaction: no startup parameters (PgBouncer refuses them, and they would
 * stay behind on whichever session they reached), no named prepared statements, no LISTEN, no
 * session advisory locks.
 */
export type PoolMode = 'session' | 'transaction';

/**
 * The `pg` connection options for our session limits and TCP keepalive (also given to the job
 * ledger's pool). In transaction mode the three limits are not startup parameters: withTransaction
 * sets them with SET LOCAL instead, and statements outside a transaction run under the role's
 * settings (docs/pgbouncer.md: ALTER ROLE … SET statement_timeout …).
 */
export function sessionOptions(
  t: Partial<DbTimeouts> = {},
  mode: PoolMode = 'session',
): Pick<
  PoolConfig,
  | 'statement_timeout'
  | 'lock_timeout'
  | 'idle_in_transaction_session_timeout'
  | 'keepAlive'
  | 'keepAliveInitialDelayMillis'
  | 'query_timeout'
> {
  const v = { ...DB_TIMEOUTS_DEFAULT, ...t };
  return {
    ...(mode === 'session'
      ? {
          statement_timeout: v.statementMs,
          lock_timeout: v.lockMs,
          idle_in_transaction_session_timeout: v.idleInTransactionMs,
        }
      : {}),
    keepAlive: true,
    keepAliveInitialDelayMillis: DB_KEEPALIVE_DELAY_MS,
    ...(v.statementMs > 0 ? { query_timeout: v.statementMs + DB_CLIENT_GRACE_MS } : {}),
  };
}

/**
 * True for a query that got no answer within the client's limit (DB_CLIENT_GRACE_MS past
 * statement_timeout): that connection still has the query in flight, so it must not be reused
 * (`client.release(true)`); anything queued behind it would wait for the same silence.
 */
export function isUnansweredQuery(err: unknown): boolean {
  return err instanceof Error && err.message === QUERY_READ_TIMEOUT;
}

/** The three limits from the validated configuration (DB_STATEMENT_TIMEOUT, DB_LOCK_TIMEOUT, DB_IDLE_IN_TRANSACTION_TIMEOUT). */
export function timeoutsFromConfig(c: {
  DB_STATEMENT_TIMEOUT?: number;
  DB_LOCK_TIMEOUT?: number;
  DB_IDLE_IN_TRANSACTION_TIMEOUT?: number;
}): DbTimeouts {
  return {
    statementMs: c.DB_STATEMENT_TIMEOUT ?? DB_STATEMENT_TIMEOUT_MS_DEFAULT,
    lockMs: c.DB_LOCK_TIMEOUT ?? DB_LOCK_TIMEOUT_MS_DEFAULT,
    idleInTransactionMs: c.DB_IDLE_IN_TRANSACTION_TIMEOUT ?? DB_IDLE_IN_TRANSACTION_TIMEOUT_MS_DEFAULT,
  };
}

/** What a pool was made with, for the helpers that behave differently per pool mode. */
export interface PoolSettings {
  mode: PoolMode;
  timeouts: DbTimeouts;
}
const poolSettings = new WeakMap<Pool, PoolSettings>();
/** Clients of session-mode pools made by createPool. */
const sessionClients = new WeakSet<object>();

/**
 * Whether `db` may hold prepared statements (libs/db/query.ts `prepared`): a session-mode pool of
 * createPool, or a client of one. Any other Queryable (a caller's own client handed to
 * enqueueOutbound, perhaps behind a transaction pooler) gets its statements unnamed.
 */
export function preparesStatements(db: Queryable): boolean {
  return sessionClients.has(db) || poolSettings.get(db as Pool)?.mode === 'session';
}

/** The pool mode and limits `pool` was created with (createPool); session and the defaults for a pool made elsewhere. */
export function poolSettingsOf(pool: Pool): PoolSettings {
  return poolSettings.get(pool) ?? { mode: 'session', timeouts: DB_TIMEOUTS_DEFAULT };
}

/**
 * In transaction mode a named statement is prepared on one server session and then executed by
 * name on whichever session the next transaction gets ("prepared statement … does not exist"), so
 * the pool's clients send every statement unnamed (parsed each time).
 */
function sendStatementsUnnamed(client: PoolClient): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  (client as { query: unknown }).query = (config: unknown, ...rest: unknown[]) => {
    if (config && typeof config === 'object' && 'name' in config && typeof config.name === 'string') {
      const { name: _unnamed, ...unnamed } = config as Record<string, unknown>;
      return query(unnamed, ...rest);
    }
    return query(config, ...rest);
  };
}

/**
 * One pool per process role, every session under `timeouts` (DB_TIMEOUTS_DEFAULT unless given) with
 * TCP keepalive on. `application_name` makes each component visible in pg_stat_activity,
 * which is how operators tell a stuck worker from a stuck poller. `poolMode` (DB_POOL_MODE, default
 * session): see PoolMode.
 */
/** How long a pool connect may wait (for the server, or for a free client) before it fails. */
export const DB_CONNECT_TIMEOUT_MS = 10_000;

export function createPool(
  connectionString: string,
  opts: {
    max?: number;
    applicationName?: string;
    timeouts?: Partial<DbTimeouts>;
    poolMode?: PoolMode;
  } & PoolConfig = {},
): Pool {
  const { applicationName, timeouts, poolMode, ...rest } = opts;
  const mode = poolMode ?? 'session';
  const pool = new Pool({
    connectionString,
    max: opts.max ?? 10,
    application_name: applicationName ?? 'tg-relay',
    connectionTimeoutMillis: DB_CONNECT_TIMEOUT_MS,
    ...sessionOptions(timeouts, mode),
    ...rest,
  });
  poolSettings.set(pool, { mode, timeouts: { ...DB_TIMEOUTS_DEFAULT, ...timeouts } });
  // An idle client that loses its connection (database restart) emits 'error' on the pool; without a
  // listener that would crash the process. The next checkout reconnects.
  pool.on('error', () => undefined);
  // pg-pool removes its own listener while a client is checked out, so a connection killed in the
  // middle of a transaction would emit an unhandled 'error' and crash the process. The query in
  // flight still rejects; this listener only keeps the process alive.
  pool.on('connect', (client) => {
    client.on('error', () => undefined);
    if (mode === 'transaction') sendStatementsUnnamed(client);
    else sessionClients.add(client);
  });
  return pool;
}

/** What `withClient` hands its callback about the connection. */
export interface ClientState {
  /** The connection failed (an 'error' event) or a query on it went unanswered. */
  readonly broken: boolean;
  /** Destroy the client instead of returning it to the pool (a cleanup query on it failed). */
  markBroken(): void;
}

/**
 * Runs `fn` on a dedicated client and gives it back to the pool, or destroys it when it cannot be
 * reused: the connection failed while we held it (the client carries an 'error' listener, e.g. a
 * restart's FATAL 57P01), a query on it went unanswered (the answer may still arrive, and anything
 * queued behind it would wait for the same silence), or `fn` said so.
 */
export async function withClient<T>(
  pool: Pool,
  fn: (client: PoolClient, state: ClientState) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  const state = {
    broken: false,
    markBroken() {
      state.broken = true;
    },
  };
  const onError = () => state.markBroken();
  client.on('error', onError);
  try {
    return await fn(client, state);
  } catch (err) {
    if (isUnansweredQuery(err)) state.markBroken();
    throw err;
  } finally {
    client.off('error', onError);
    client.release(state.broken || undefined);
  }
}

/**
 * The statement that opens a transaction: `begin`, and in transaction mode also the session limits
 * as SET LOCAL (they cannot be startup parameters there), in the same round trip. 0 leaves the
 * server's setting, as it does for a startup parameter.
 */
export function beginStatement(pool: Pool): string {
  const s = poolSettings.get(pool);
  if (!s || s.mode === 'session') return 'begin';
  const limits: [string, number][] = [
    ['statement_timeout', s.timeouts.statementMs],
    ['lock_timeout', s.timeouts.lockMs],
    ['idle_in_transaction_session_timeout', s.timeouts.idleInTransactionMs],
  ];
  return ['begin', ...limits.filter(([, ms]) => ms > 0).map(([k, ms]) => `set local ${k} = ${Math.floor(ms)}`)].join(
    '; ',
  );
}

/**
 * Runs `fn` in a transaction on a dedicated client (withClient); rolls back on any error and
 * rethrows it. No rollback on a broken client: after an unanswered query it would queue behind it.
 */
export async function withTransaction<T>(pool: Pool, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  return withClient(pool, async (client, state) => {
    let committed = false;
    try {
      await client.query(beginStatement(pool));
      const result = await fn(client);
      committed = await commit(client);
      return result;
    } catch (err) {
      if (isUnansweredQuery(err)) state.markBroken();
      if (!state.broken) await client.query('rollback').catch(() => state.markBroken());
      throw err;
    } finally {
      transactionEnded(client, committed);
    }
  });
}
