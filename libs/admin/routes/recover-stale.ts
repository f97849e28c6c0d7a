import { Type } from '@sinclair/typebox';
import { parseDuration } from '../../config/duration';
import { withTransaction } from '../../db/pool';
import type { AdminContext } from '../context';
import { AdminError } from '../errors';
import { ITEM_KINDS } from '../kinds';
import { errors } from '../schemas';
import { emptyBodyIsObject, Reason, WriteApp, WriteKit } from './write-kit';

/** recover-stale's older_than: at most a year (an interval PostgreSQL and a JS number hold). */
export const RECOVER_OLDER_THAN_MAX_MS = 365 * 24 * 3_600_000;

const RecoverStaleBody = Type.Object(
  {
    older_than: Type.Optional(
      Type.Union([
        Type.String({ pattern: '^[0-9]{1,15}(ms|s|m|h)?$' }),
        Type.Integer({ minimum: 1000, maximum: RECOVER_OLDER_THAN_MAX_MS }),
      ]),
    ),
    kinds: Type.Optional(
      Type.Array(Type.Union(ITEM_KINDS.map((k) => Type.Literal(k))), { minItems: 1, uniqueItems: true }),
    ),
    reason: Type.Optional(Reason),
  },
  { additionalProperties: false },
);

/** The body's older_than in milliseconds (default STALE_AFTER); out of range is a 400. */
function olderThanMsOf(ctx: AdminContext, raw: string | number | undefined): number {
  const olderThanMs = raw === undefined ? ctx.config.STALE_AFTER : typeof raw === 'number' ? raw : parseDuration(raw);
  if (olderThanMs === undefined || olderThanMs < 1000 || olderThanMs > RECOVER_OLDER_THAN_MAX_MS) {
    throw new AdminError('RELAY_ADMIN_VALIDATION', 'body.older_than must be a duration from 1s to 365 days', {
      field: 'body.older_than',
    });
  }
  return olderThanMs;
}

/**
 * POST /v1/recover-stale. The recovery runs in its own transactions per kind (it is not a row
 * lock and check), so only the audit row has a transaction here.
 */
export function registerRecoverStale(app: WriteApp, ctx: AdminContext, kit: WriteKit): void {
  app.post(
    '/v1/recover-stale',
    {
      preValidation: emptyBodyIsObject,
      schema: {
        tags: ['recovery'],
        summary: 'Return delivering work whose worker stopped heartbeating to pending now; counts per kind',
        description:
          'older_than: how long without a heartbeat (a duration like 30s, 5m, or milliseconds; at least 1s; default STALE_AFTER).',
        body: RecoverStaleBody,
        response: {
          200: Type.Object({
            older_than_ms: Type.Integer(),
            recovered: Type.Record(Type.String(), Type.Integer()),
            total: Type.Integer(),
            audit_id: Type.Integer(),
          }),
          ...errors(400, 401),
        },
      },
    },
    async (req) => {
      const startedAt = ctx.clock();
      const olderThanMs = olderThanMsOf(ctx, req.body.older_than);
      const kinds = req.body.kinds ?? [...ITEM_KINDS];
      const recovered: Record<string, number> = {};
      for (const kind of kinds) recovered[kind] = await ctx.actions.recoverStale(kind, olderThanMs, ctx.instanceId);
      const total = Object.values(recovered).reduce((a, b) => a + b, 0);
      const auditId = await withTransaction(ctx.pool, (db) =>
        kit.audit({ db, req, startedAt }, 'recover_stale', {
          details: { older_than_ms: olderThanMs, kinds, recovered, count: total, reason: req.body.reason ?? null },
        }),
      );
      return { older_than_ms: olderThanMs, recovered, total, audit_id: auditId };
    },
  );
}
