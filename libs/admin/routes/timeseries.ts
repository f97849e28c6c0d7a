import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AdminContext } from '../context';
import { read } from '../db';
import type { Queryable } from '../../db/pool';
import { ITEM_KINDS, ItemKind, KINDS, WORK_SUBJECTS_SQL } from '../kinds';
import { ATTEMPT_BOT_SQL } from '../queries';
import { BotIdFilter, errors } from '../schemas';
import type { AttemptBucket, AttemptTimeseries } from '../ui/api-types';

export const TIMESERIES_MINUTES_DEFAULT = 15;
export const TIMESERIES_BUCKET_SECONDS_DEFAULT = 60;

/**
 * Delivery attempts per subject and bucket in [from, to), served by attempts_started_idx (15
 * minutes of a bot at its 30 msg/s limit is ~27k index entries), of one bot's items (a primary-key
 * lookup per attempt: attempts carry no bot_id) or all. Admin rows are not attempts.
 * Kept next to its only route rather than in queries.ts, which belongs to the core admin API.
 */
export async function attemptsTimeseries(
  db: Queryable,
  from: Date,
  to: Date,
  bucketSeconds: number,
  botId?: string,
): Promise<{ subject: string; bucket: number; attempts: number; delivered: number; failed: number }[]> {
  return read(
    db,
    `select subject,
            floor(extract(epoch from started_at) / $3)::int8 * $3 as bucket,
            count(*)::int8 as attempts,
            count(*) filter (where outcome in ('delivered', 'handled'))::int8 as delivered,
            count(*) filter (where outcome = 'failed')::int8 as failed
       from relay.attempts a
      where started_at >= $1 and started_at < $2 and subject in (${WORK_SUBJECTS_SQL})${botId ? ` and ${ATTEMPT_BOT_SQL} = $4` : ''}
      group by 1, 2`,
    botId ? [from, to, bucketSeconds, botId] : [from, to, bucketSeconds],
  );
}

const Bucket = Type.Object({
  at: Type.String({ format: 'date-time' }),
  attempts: Type.Integer(),
  delivered: Type.Integer(),
  failed: Type.Integer(),
});

/** GET /v1/stats/timeseries: the dashboard's throughput and failure-rate charts. */
// eslint-disable-next-line @typescript-eslint/require-await -- a fastify plugin: async so that a route registration that throws rejects register() (a sync throw escapes avvio)
export const timeseriesRoutes: FastifyPluginAsyncTypebox<{ ctx: AdminContext }> = async (app, { ctx }) => {
  app.get(
    '/v1/stats/timeseries',
    {
      schema: {
        tags: ['stats'],
        summary:
          'Delivery attempts, deliveries and failures per kind and time bucket (relay.attempts), oldest bucket first',
        description:
          'Buckets are aligned to multiples of bucket_seconds since the epoch; the last one is the current, partial bucket. Every bucket is present (zeros included).',
        querystring: Type.Object(
          {
            minutes: Type.Optional(Type.Integer({ minimum: 1, maximum: 180, default: TIMESERIES_MINUTES_DEFAULT })),
            bucket_seconds: Type.Optional(
              Type.Integer({ minimum: 10, maximum: 3600, default: TIMESERIES_BUCKET_SECONDS_DEFAULT }),
            ),
            bot_id: Type.Optional({ ...BotIdFilter, description: "only this bot's attempts (default: every bot's)" }),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({
            generated_at: Type.String({ format: 'date-time' }),
            from: Type.String({ format: 'date-time' }),
            bucket_seconds: Type.Integer(),
            kinds: Type.Object(Object.fromEntries(ITEM_KINDS.map((k) => [k, Type.Array(Bucket)]))),
          }),
          ...errors(400, 401),
        },
      },
    },
    async (req): Promise<AttemptTimeseries> => {
      const minutes = req.query.minutes ?? TIMESERIES_MINUTES_DEFAULT;
      const bucketMs = (req.query.bucket_seconds ?? TIMESERIES_BUCKET_SECONDS_DEFAULT) * 1000;
      const now = ctx.clock();
      const count = Math.max(1, Math.ceil((minutes * 60_000) / bucketMs));
      const last = Math.floor(now.getTime() / bucketMs) * bucketMs;
      const first = last - (count - 1) * bucketMs;
      const rows = await attemptsTimeseries(
        ctx.pool,
        new Date(first),
        new Date(last + bucketMs),
        bucketMs / 1000,
        req.query.bot_id,
      );
      const kinds = {} as Record<ItemKind, AttemptBucket[]>;
      for (const kind of ITEM_KINDS) {
        const subject = KINDS[kind].subject;
        kinds[kind] = Array.from({ length: count }, (_, i) => {
          const start = first + i * bucketMs;
          const r = rows.find((x) => x.subject === subject && x.bucket * 1000 === start);
          return {
            at: new Date(start).toISOString(),
            attempts: r?.attempts ?? 0,
            delivered: r?.delivered ?? 0,
            failed: r?.failed ?? 0,
          };
        });
      }
      return {
        generated_at: now.toISOString(),
        from: new Date(first).toISOString(),
        bucket_seconds: bucketMs / 1000,
        kinds,
      };
    },
  );
};
