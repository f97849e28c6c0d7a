import type { Pool } from 'pg';

const TABLES = ['relay.captures', 'relay.outbound', 'relay.inbox', 'relay.quarantine', 'relay.attempts'];

/**
 * A digest of everything an admin write can change: the relay's tables (audit rows included)
 * and pg-boss's job count. Equal before and after a request means it changed nothing.
 */
export async function dbFingerprint(pool: Pool, tables = TABLES): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const t of tables) {
    const { rows } = await pool.query(
      `select count(*)::text || ':' || coalesce(md5(string_agg(x::text, '|' order by x.id)), '') as d from ${t} x`,
    );
    out[t] = rows[0].d;
  }
  const { rows } = await pool.query(`select count(*)::text as n from tg_relay_boss.job`);
  out['tg_relay_boss.job'] = rows[0].n;
  return out;
}

/** The business tables only (refused 404/409 calls add an audit row in relay.attempts by design). */
export const ITEM_TABLES = ['relay.captures', 'relay.outbound', 'relay.inbox', 'relay.quarantine'];
