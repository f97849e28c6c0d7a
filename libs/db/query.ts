/**
 * A small typed-row layer over node-postgres: a statement carries the type of the rows it returns,
 * so callers get typed rows without a cast at each call site and the row shape is written once,
 * next to the SQL. Values are always $n parameters.
 *
 *   const NEXT = statement<{ ms: number | null }>('select … as ms from … where x = $1');
 *   const [row] = await query(db, NEXT, [x]);
 */
import { createHash } from 'node:crypto';
import { Pool, type QueryResultRow } from 'pg';
import { preparesStatements, type Queryable } from './pool';

/** SQL text and the type of its result rows (the row type exists only for the compiler). */
export interface Statement<Row extends QueryResultRow> {
  readonly text: string;
  /** A prepared statement's name (see `prepared`); unnamed statements are parsed at every call. */
  readonly name?: string;
  /** Never set: carries `Row` for inference. */
  readonly row?: Row;
}

export function statement<Row extends QueryResultRow>(text: string): Statement<Row> {
  return { text };
}

/**
 * A statement run often on the hot path (claims, settles, heartbeats): prepared by name on each
 * connection the first time it runs there, so PostgreSQL parses it once per connection, and plans it
 * once when a generic plan is as good as the custom ones (after five runs). An unnamed statement is
 * parsed and planned at every call: 0.5-1.8 ms for the engine's claims and settles here, more than
 * they take to execute. A generic plan does not see the values: check a statement beside a backlog
 * before preparing it (bench/fleet.ts, bench/worker.ts (b)); outboundHasSuccessors is one whose
 * generic plan is a disaster. The name is derived from the text, so one text is one name in every
 * process. Build each once (a module constant, or once per store): every distinct text stays
 * prepared on each connection that ran it. It is sent unnamed on anything but a session-mode pool
 * of createPool or its clients (preparesStatements).
 */
export function prepared<Row extends QueryResultRow>(text: string): Statement<Row> {
  return { text, name: `tgr_${createHash('sha1').update(text).digest('hex').slice(0, 24)}` };
}

/**
 * Names re-prepared after a table's columns changed under them (a migration while this process
 * runs): PostgreSQL then refuses the statement prepared before ("cached plan must not change result
 * type") on every connection that holds it, so from then on it is prepared under a new name.
 */
const renamed = new Map<string, number>();

const isStalePlan = (err: unknown): boolean =>
  (err as { code?: unknown })?.code === '0A000' && /cached plan must not change result type/.test(String(err));

/** Runs `stmt` with `values`; resolves to its rows, typed by the statement. */
export async function query<Row extends QueryResultRow>(
  db: Queryable,
  stmt: Statement<Row>,
  values: unknown[] = [],
): Promise<Row[]> {
  if (!stmt.name || !preparesStatements(db)) return (await db.query<Row>(stmt.text, values)).rows;
  const run = () => {
    const gen = renamed.get(stmt.name!);
    return db.query<Row>({ name: gen ? `${stmt.name}_${gen}` : stmt.name!, text: stmt.text, values });
  };
  try {
    return (await run()).rows;
  } catch (err) {
    if (!isStalePlan(err)) throw err;
    renamed.set(stmt.name, (renamed.get(stmt.name) ?? 0) + 1);
    // on a pool nothing else was in the failed statement's transaction: run it again at once; on a
    // client the caller's transaction is aborted, and its retry prepares the new name
    if (db instanceof Pool) return (await run()).rows;
    throw err;
  }
}

/** Runs `stmt`; resolves to its first row, or undefined when it returned none. */
export async function queryOne<Row extends QueryResultRow>(
  db: Queryable,
  stmt: Statement<Row>,
  values: unknown[] = [],
): Promise<Row | undefined> {
  return (await query(db, stmt, values))[0];
}
