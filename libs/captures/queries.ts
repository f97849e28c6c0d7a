/** The SQL of relay.captures beyond the engine's generated claim statements (libs/queue/claim-sql.ts). */
import type { Queryable } from '../db/pool';

/**
 * Milliseconds until the soonest pending capture of `botIds` is due (0: now; null: none): one probe
 * of captures_bot_due_idx per bot, so captures of other bots (a backlog that has no collector) are
 * never read.
 */
export async function captureNextDueInMs(
  db: Queryable,
  botIds: readonly string[],
  now: Date | null,
): Promise<number | null> {
  if (botIds.length === 0) return null;
  const { rows } = await db.query<{ ms: number | null }>(
    `select case when min(d.next_attempt_at) is null then null
                else greatest(0, extract(epoch from (min(d.next_attempt_at) - coalesce($2::timestamptz, now()))) * 1000)::float8 end as ms
       from unnest($1::text[]) as b(bot_id)
       cross join lateral (select c.next_attempt_at from relay.captures c
                            where c.bot_id = b.bot_id and c.state = 'pending'
                            order by c.next_attempt_at limit 1) d`,
    [botIds, now],
  );
  return rows[0]?.ms ?? null;
}
