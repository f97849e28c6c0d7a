/** SQL of fleet ingress (sql/0036_ingress_members.sql): the pollers' beats and the bots whose lease is free. */
import type { Queryable } from '../db/pool';

/**
 * Records that `owner` is alive for `ttlMs` more and serves up to `maxBots`; answers the caps of
 * every live poller, this one included. Rows expired for a minute are deleted on the way.
 */
export async function memberBeat(db: Queryable, owner: string, maxBots: number, ttlMs: number): Promise<number[]> {
  const { rows } = await db.query<{ max_bots: number }>(
    `with beat as (
       insert into relay.ingress_members as m (owner, max_bots, expires_at)
       values ($1, $2, clock_timestamp() + $3 * interval '1 millisecond')
       on conflict (owner) do update set max_bots = excluded.max_bots, expires_at = excluded.expires_at
       returning max_bots
     ), gone as (
       delete from relay.ingress_members
        where expires_at < clock_timestamp() - interval '1 minute' and owner <> $1
     )
     select max_bots from relay.ingress_members where expires_at > clock_timestamp() and owner <> $1
     union all
     select max_bots from beat`,
    [owner, maxBots, ttlMs],
  );
  return rows.map((r) => r.max_bots);
}

/** The poller is going away: the others count without it at their next beat. */
export async function memberLeave(db: Queryable, owner: string): Promise<void> {
  await db.query('delete from relay.ingress_members where owner = $1', [owner]);
}

/** Of `botIds`, those no poller holds now: never polled, released, or expired. */
export async function botsWithFreeLease(db: Queryable, botIds: readonly string[]): Promise<string[]> {
  if (botIds.length === 0) return [];
  const { rows } = await db.query<{ id: string }>(
    `select b.id from unnest($1::text[]) as b(id)
       left join relay.cursor c on c.bot_id = b.id
      where c.bot_id is null or c.lease_owner is null or c.lease_expires_at <= clock_timestamp()`,
    [botIds],
  );
  return rows.map((r) => r.id);
}
