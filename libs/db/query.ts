/**
 * A small typed-row layer over node-postgres: a statement carries the type of the rows it returns,
 * so callers get typed rows without a cast at each call site and the row shape is written once,
 * next to the SQL. Values are always $n parameters.
 *
 *   const NEXT = statement<{ ms: number | null }>('select … as ms from … where x = $1');
 *   const [row] = await query(db, NEXT, [x]);
 */
import type { QueryResultRow } from 'pg';
import type { Queryable } from './pool';

/** SQL text and the type of its result rows (the row type exists only for the compiler). */
export interface Statement<Row extends QueryResultRow> {
  readonly text: string;
  /** Never set: carries `Row` for inference. */
  readonly row?: Row;
}

export function statement<Row extends QueryResultRow>(text: string): Statement<Row> {
  return { text };
}

/** Runs `stmt` with `values`; resolves to its rows, typed by the statement. */
export async function query<Row extends QueryResultRow>(
  db: Queryable,
  stmt: Statement<Row>,
  values: unknown[] = [],
): Promise<Row[]> {
  const res = await db.query<Row>(stmt.text, values);
  return res.rows;
}

/** Runs `stmt`; resolves to its first row, or undefined when it returned none. */
export async function queryOne<Row extends QueryResultRow>(
  db: Queryable,
  stmt: Statement<Row>,
  values: unknown[] = [],
): Promise<Row | undefined> {
  return (await query(db, stmt, values))[0];
}
