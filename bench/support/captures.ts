/** Bulk fixtures for the benches that need a large ready backlog. */
import { type Pool, QUEUES, withTransaction } from '../../libs/db';

/** `n` ready captures with their pg-boss jobs, in one statement pair (generate_series). */
export async function bulkCaptures(pool: Pool, n: number, offset: number): Promise<void> {
  const CHUNK = 100_000;
  for (let done = 0; done < n; done += CHUNK) {
    const size = Math.min(CHUNK, n - done);
    const from = offset + done + 1;
    await withTransaction(pool, async (c) => {
      await c.query(
        `with ids as (
           select g, gen_random_uuid() as job_id from generate_series($1::bigint, $1::bigint + $2 - 1) g
         ), caps as (
           insert into relay.captures (capture_key, bot_id, update_id, chat_id, message_id, from_id, text, payload, payload_sha256, job_id)
           select 'telegram:' || g || ':42:' || g, '1', g, 42, g, 7, 'bench ' || g,
                  jsonb_build_object('key', 'telegram:' || g || ':42:' || g, 'update_id', g, 'chat', jsonb_build_object('id', 42, 'type', 'private'),
                                     'from', jsonb_build_object('id', 7), 'text', 'bench ' || g, 'date', 1700000000,
                                     'message', jsonb_build_object('message_id', g, 'date', 1700000000, 'text', 'bench ' || g)),
                  md5(g::text), job_id
             from ids
           returning id, job_id
         )
         insert into tg_relay_boss.job (id, name, data, retry_limit, expire_in, keep_until, policy)
         select job_id, $3, jsonb_build_object('id', id), 0, interval '23 hours', now() + interval '30 days', 'standard' from caps`,
        [from, size, QUEUES.capture],
      );
    });
  }
}
