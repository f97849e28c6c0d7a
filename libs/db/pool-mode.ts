/**
 * DB_POOL_MODE against what the connection really is (docs/pgbouncer.md). DB_POOL_MODE=session (the
 * default) relies on each connection being one server session for its whole life: LISTEN wake-ups,
 * session advisory locks, session settings sent as startup parameters, named prepared statements.
 * Behind a transaction pooler (PgBouncer pool_mode=transaction) none of that holds, and most of it
 * fails quietly (a LISTEN that never hears, a lock held by a session someone else gets next), so a
 * process in session mode refuses to start there, with an error naming DB_POOL_MODE.
 */
import { errorCode, errorMessage, hasCode } from '../errors';
import { Client } from 'pg';
import { RelayError } from '../errors/relay-error';
import { EXIT_CONFIG } from '../lifecycle/exit-codes';
import type { Logger } from '../observability/logger';
import { DbTimeouts, sessionOptions } from './pool';

/** DB_POOL_MODE does not fit the connection (or a session-level connection is needed and not configured). */
export class PoolModeError extends RelayError {
  readonly code = 'RELAY_DB_POOL_MODE';
  readonly exitCode = EXIT_CONFIG; // the configuration does not match the database it points at
}

/** Rounds of the probe; one is conclusive with PgBouncer's LIFO reuse, more cover round-robin reuse. */
const PROBE_ROUNDS = 4;
const PROBE_TIMEOUT_MS = 10_000;

type Pid = { pid: number };
const backendPid = async (c: Client) => (await c.query<Pid>('select pg_backend_pid() as pid')).rows[0].pid;

/**
 * Whether `url` keeps each client on one server session ('session') or lends server sessions per
 * transaction ('transaction'). Two clients: A asks for its backend pid; B opens a transaction and
 * asks for its own; A asks again; B rolls back. With a server session per client, B's pid is never
 * A's (both sessions are alive) and A's never changes. A transaction pooler gives B the session A
 * just released (PgBouncer reuses the most recent one) and A another one, so either rule breaks; a
 * pooler that rotates its sessions instead breaks the second within a few rounds.
 */
export async function probePooling(url: string): Promise<'session' | 'transaction'> {
  const opts = { connectionString: url, application_name: 'tg-relay:pool-probe', query_timeout: PROBE_TIMEOUT_MS };
  const a = new Client({ ...opts, connectionTimeoutMillis: PROBE_TIMEOUT_MS });
  const b = new Client({ ...opts, connectionTimeoutMillis: PROBE_TIMEOUT_MS });
  a.on('error', () => undefined);
  b.on('error', () => undefined);
  try {
    await a.connect();
    await b.connect();
    for (let i = 0; i < PROBE_ROUNDS; i++) {
      const before = await backendPid(a);
      await b.query('begin');
      try {
        const held = await backendPid(b);
        const after = await backendPid(a);
        if (held === before || after !== before) return 'transaction';
      } finally {
        await b.query('rollback');
      }
    }
    return 'session';
  } finally {
    await Promise.all([a.end().catch(() => undefined), b.end().catch(() => undefined)]);
  }
}

/** PgBouncer's answer to a startup parameter it does not know (SQLSTATE 08P01). */
function refusedStartupParameter(err: unknown): string | undefined {
  const message = errorMessage(err);
  return hasCode(err, '08P01') && /unsupported startup parameter/i.test(message ?? '') ? message : undefined;
}

/** Opens one connection with the startup parameters our session-mode pools send; the refusal, if any. */
async function startupRefusal(url: string, timeouts: Partial<DbTimeouts>): Promise<string | undefined> {
  const { statement_timeout, lock_timeout, idle_in_transaction_session_timeout } = sessionOptions(timeouts);
  const c = new Client({
    connectionString: url,
    application_name: 'tg-relay:pool-probe',
    connectionTimeoutMillis: PROBE_TIMEOUT_MS,
    statement_timeout,
    lock_timeout,
    idle_in_transaction_session_timeout,
  });
  c.on('error', () => undefined);
  try {
    await c.connect();
    return undefined;
  } catch (err) {
    const refused = refusedStartupParameter(err);
    if (refused) return refused;
    throw err;
  } finally {
    await c.end().catch(() => undefined);
  }
}

/**
 * Refuses to go on when `url` (the value of `variable`) is not a session-level connection, which
 * DB_POOL_MODE=session needs for DATABASE_URL and migrations need for DATABASE_DIRECT_URL. A
 * database that cannot be reached is not judged here (logged): the caller's own connections wait
 * for it or fail as they always did.
 */
export async function assertSessionLevel(
  url: string,
  opts: { variable: 'DATABASE_URL' | 'DATABASE_DIRECT_URL'; timeouts?: Partial<DbTimeouts>; logger?: Logger },
): Promise<void> {
  let refused: string | undefined;
  let pooling: 'session' | 'transaction';
  try {
    refused = await startupRefusal(url, opts.timeouts ?? {});
    pooling = await probePooling(url);
  } catch (err) {
    opts.logger?.warn(
      { err: { message: errorMessage(err), code: errorCode(err) } },
      `cannot check how ${opts.variable} pools connections (the database is not reachable yet); going on`,
    );
    return;
  }
  const fix =
    opts.variable === 'DATABASE_URL'
      ? 'set DB_POOL_MODE=transaction (polling wake-ups, no session state: docs/pgbouncer.md), or point DATABASE_URL at PostgreSQL directly'
      : 'point DATABASE_DIRECT_URL at PostgreSQL directly, not at the pooler';
  if (pooling === 'transaction') {
    throw new PoolModeError(
      `${opts.variable} leads to a transaction-pooling proxy (such as PgBouncer with pool_mode=transaction): ` +
        `one connection's statements run on different server sessions, and ${
          opts.variable === 'DATABASE_URL'
            ? 'DB_POOL_MODE=session (the default) relies on one session per connection (LISTEN, session locks and settings, prepared statements)'
            : 'migrations rely on one session per connection (a session advisory lock serialises replicas)'
        }: ${fix}`,
    );
  }
  if (refused) {
    throw new PoolModeError(
      `${opts.variable} refuses the session limits as startup parameters (${refused}; PgBouncer refuses them unless ` +
        `ignore_startup_parameters lists them, and then they are not applied): ${fix}`,
    );
  }
}
