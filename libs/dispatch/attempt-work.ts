/**
 * What a dispatch attempt writes to the database besides its replies: its sessions
 * (attempt-sessions.ts) and the handler's own transaction (`dispatch.transaction(ctx)`). Both commit
 * in the transaction that marks the update handled, or not at all.
 *
 * The transaction: the first `open()` checks a connection out of the worker's pool and BEGINs; the
 * handler's queries run on it. If the attempt is handled, the connection is handed to the engine
 * (`handOver`), which writes the outcome on it alone and COMMITs; otherwise (`discard`) it is rolled
 * back and released. Once the attempt is over the handler's client refuses queries.
 */
import type { Pool, PoolClient, QueryResult, QueryResultRow } from 'pg';
import { beginStatement } from '../db/pool';
import { commit, transactionEnded } from '../db/transaction-end';
import type { AttemptTransaction } from '../queue/attempt-transaction';
import { AttemptSessions } from './attempt-sessions';
import { DispatchClosedError } from './errors';
import { DispatchDatabaseUnavailableError } from './session-errors';
import type { PrefetchedSession } from './session-queries';

/** The client `dispatch.transaction(ctx)` resolves with: queries only (no release, no commit: the relay does those). */
export interface DispatchClient {
  query<R extends QueryResultRow = QueryResultRow>(text: string, values?: unknown[]): Promise<QueryResult<R>>;
}

export interface AttemptWorkOptions {
  /** The worker's pool; without one, sessions and transactions are refused. */
  pool?: Pool;
  botId: string;
  /** SESSION_TTL. */
  sessionTtlMs: number;
  /** The update's session as the claim read it (see AttemptSessions). */
  prefetched?: PrefetchedSession;
}

export class AttemptWork {
  readonly botId: string;
  private readonly pool?: Pool;
  private sessionsOf?: AttemptSessions;
  private opening?: Promise<PoolClient>;
  private closed = false;
  private readonly client: DispatchClient;

  constructor(private readonly opts: AttemptWorkOptions) {
    this.botId = opts.botId;
    this.pool = opts.pool;
    this.client = {
      query: async <R extends QueryResultRow>(text: string, values?: unknown[]) => {
        if (this.closed) throw new DispatchClosedError('query', 'handler transaction');
        const c = await this.opening!;
        if (this.closed) throw new DispatchClosedError('query', 'handler transaction');
        return c.query<R>(text, values);
      },
    };
  }

  /** This attempt's sessions (created on first use). */
  get sessions(): AttemptSessions {
    if (!this.pool) throw new DispatchDatabaseUnavailableError('a session store');
    this.sessionsOf ??= new AttemptSessions(
      { pool: this.pool, botId: this.botId, ttlMs: this.opts.sessionTtlMs },
      this,
      this.opts.prefetched,
    );
    return this.sessionsOf;
  }

  /** This attempt's sessions if it used any (never creates them). */
  get sessionsIfUsed(): AttemptSessions | undefined {
    return this.sessionsOf;
  }

  /** The handler's transaction: opened on the first call, the same one after. */
  async open(): Promise<DispatchClient> {
    if (this.closed) throw new DispatchClosedError('transaction', 'handler transaction');
    const pool = this.pool;
    if (!pool) throw new DispatchDatabaseUnavailableError('dispatch.transaction(ctx)');
    this.opening ??= (async () => {
      const c = await pool.connect();
      try {
        await c.query(beginStatement(pool));
      } catch (err) {
        c.release(true);
        throw err;
      }
      return c;
    })();
    this.opening.catch(() => undefined);
    await this.opening;
    if (this.closed) throw new DispatchClosedError('transaction', 'handler transaction');
    return this.client;
  }

  /** Runs inside the outcome transaction: the attempt's session writes. */
  async commit(client: PoolClient): Promise<void> {
    if (this.sessionsOf) await this.sessionsOf.commit(client);
  }

  /** The attempt is over: nothing more is read or written through it. */
  close(): void {
    this.closed = true;
    this.sessionsOf?.close();
  }

  /** For a handled attempt: its open transaction (if any) for the engine to commit the outcome on. */
  async handOver(): Promise<AttemptTransaction | undefined> {
    this.close();
    if (!this.opening) return undefined;
    let client: PoolClient;
    try {
      client = await this.opening;
    } catch {
      return undefined; // never opened: the handler saw the error and finished anyway
    }
    let ended: Promise<void> | undefined;
    return { client, end: (commit) => (ended ??= endTransaction(client, commit)) };
  }

  /** For an attempt that is not handled: its transaction rolls back (without waiting for a query the handler left running). */
  discard(): void {
    this.close();
    this.opening?.then((c) => endTransaction(c, false)).catch(() => undefined);
  }
}

async function endTransaction(client: PoolClient, toCommit: boolean): Promise<void> {
  let broken = false;
  let committed = false;
  try {
    if (toCommit) committed = await commit(client);
    else await client.query('rollback');
  } catch (err) {
    broken = true;
    throw err;
  } finally {
    transactionEnded(client, committed);
    client.release(broken || undefined);
  }
}
