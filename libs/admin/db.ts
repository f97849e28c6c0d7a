import { types } from 'pg';
import type { QueryResultRow } from 'pg';
import type { Queryable } from '../db/pool';

const INT8 = 20;
const NUMERIC = 1700;
const TIMESTAMPTZ = 1184;
const TIMESTAMP = 1114;

/**
 * Type parsers for the admin API's reads, so rows are JSON-ready: bigints become numbers (our ids
 * and Telegram's ids are below 2^53 — Telegram documents at most 52 significant bits) and
 * timestamps become ISO strings with their microseconds cut to milliseconds.
 */
const adminTypes = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
    if (oid === INT8 || oid === NUMERIC) return (v: string) => Number(v);
    // pg-types types its parsers as `any`: give them the shape they have (a column's text in, a value out)
    if (oid === TIMESTAMPTZ || oid === TIMESTAMP)
      return (v: string) => new Date((types.getTypeParser(oid, 'text') as (v: string) => Date)(v)).toISOString();
    return types.getTypeParser(oid, format ?? 'text') as (v: string) => unknown;
  }) as typeof types.getTypeParser,
};

/** Runs a read with the admin API's JSON-friendly type parsers. */
export async function read<R extends QueryResultRow = Record<string, unknown>>(
  db: Queryable,
  text: string,
  values: unknown[] = [],
): Promise<R[]> {
  const res = await db.query<R>({ text, values, types: adminTypes });
  return res.rows;
}
