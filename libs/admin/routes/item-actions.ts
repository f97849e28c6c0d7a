import { Type } from '@sinclair/typebox';
import type { AdminContext } from '../context';
import { ItemKind, KINDS } from '../kinds';
import { WORK_TYPES } from '../../queue/work-types';
import { ListFilter, itemsSelectFailed } from '../queries';
import { BotIdFilter, chatFilterFor, ErrorText, errors, IdParams } from '../schemas';
import { ActionResult, emptyBodyIsObject, Reason, ReasonBody, WriteApp, WriteKit } from './write-kit';

/** The bulk retry's body (the route's schema, whose chat filter exists for some kinds only). */
type BulkRetryBody = ListFilter & { limit?: number; dry_run?: boolean; reason?: string };

/** POST /v1/<kind>/:id/retry, /v1/<kind>/retry and (where the kind's model allows it) /v1/<kind>/:id/cancel. */
export function registerItemActions(app: WriteApp, ctx: AdminContext, kit: WriteKit, kind: ItemKind): void {
  registerRetryOne(app, ctx, kit, kind);
  registerRetryBulk(app, ctx, kit, kind);
  if (WORK_TYPES[kind].model.cancelFrom.length > 0) registerCancel(app, ctx, kit, kind);
}

function registerRetryOne(app: WriteApp, ctx: AdminContext, kit: WriteKit, kind: ItemKind): void {
  app.post(
    `/v1/${kind}/:id/retry`,
    {
      preValidation: emptyBodyIsObject,
      schema: {
        tags: [kind],
        summary: `Retry a failed ${KINDS[kind].noun} now: failed → pending, attempt budget renewed`,
        params: IdParams,
        body: ReasonBody,
        response: { 200: ActionResult, ...errors(400, 401, 404, 409) },
      },
    },
    async (req) => {
      const startedAt = ctx.clock();
      const reason = req.body.reason ?? null;
      return kit.act(req, startedAt, async (s) => {
        const row = await kit.lockOne(s, 'retry', kind, req.params.id, 'failed', 'RELAY_ADMIN_NOT_FAILED');
        if ('refused' in row) return row;
        const moved = await ctx.actions.retryFailed(s.db, kind, [row.id], { actor: req.actor!, reason });
        const auditId = await kit.audit(s, 'retry', {
          kind,
          subjectId: row.id,
          subjectKey: row.key,
          details: { reason, count: moved.length },
        });
        return { id: row.id, state: moved[0]?.state ?? 'pending', audit_id: auditId };
      });
    },
  );
}

function bulkRetryBody(ctx: AdminContext, kind: ItemKind) {
  return Type.Object(
    {
      state: Type.Optional(Type.Literal('failed', { description: 'only failed rows can be retried' })),
      ...(KINDS[kind].chatColumns.length ? { chat: Type.Optional(chatFilterFor(kind)) } : {}),
      bot_id: Type.Optional(BotIdFilter),
      since: Type.Optional(Type.String({ format: 'date-time' })),
      until: Type.Optional(Type.String({ format: 'date-time' })),
      error: Type.Optional(ErrorText),
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: ctx.bulkLimit, default: ctx.bulkLimit })),
      dry_run: Type.Optional(Type.Boolean({ default: false })),
      reason: Type.Optional(Reason),
    },
    { additionalProperties: false },
  );
}

const BulkRetryResult = Type.Object({
  kind: Type.String(),
  dry_run: Type.Boolean(),
  matched: Type.Integer({ description: 'failed rows matched by this call (≤ limit)' }),
  retried: Type.Integer(),
  more: Type.Boolean({ description: 'more matching rows remain beyond this call' }),
  ids: Type.Array(Type.Integer()),
  audit_id: Type.Integer(),
});

function registerRetryBulk(app: WriteApp, ctx: AdminContext, kit: WriteKit, kind: ItemKind): void {
  app.post(
    `/v1/${kind}/retry`,
    {
      schema: {
        tags: [kind],
        summary: `Bulk retry of failed ${KINDS[kind].noun}s matching a filter, at most ${ctx.bulkLimit} per call (dry_run counts only)`,
        description:
          'Oldest first. `more: true` means more rows match: call again. Rows another transaction holds are skipped.',
        body: bulkRetryBody(ctx, kind),
        response: { 200: BulkRetryResult, ...errors(400, 401) },
      },
    },
    async (req) => {
      const startedAt = ctx.clock();
      const { limit = ctx.bulkLimit, dry_run = false, reason, state: _state, ...filter } = req.body as BulkRetryBody;
      return kit.act(req, startedAt, async (s) => {
        const { ids, more } = await itemsSelectFailed(s.db, kind, filter, limit, !dry_run);
        const moved =
          dry_run || ids.length === 0
            ? []
            : await ctx.actions.retryFailed(s.db, kind, ids, { actor: req.actor!, reason: reason ?? null });
        const movedIds = dry_run ? [] : moved.map((m) => m.id);
        const auditId = await kit.audit(s, dry_run ? 'retry_bulk_dry_run' : 'retry_bulk', {
          kind,
          details: {
            filter: { ...filter, state: 'failed' },
            limit,
            dry_run,
            reason: reason ?? null,
            matched: ids.length,
            count: movedIds.length,
            more,
            ids: dry_run ? ids : movedIds,
          },
        });
        return {
          kind,
          dry_run,
          matched: ids.length,
          retried: movedIds.length,
          more,
          ids: dry_run ? ids : movedIds,
          audit_id: auditId,
        };
      });
    },
  );
}

function registerCancel(app: WriteApp, ctx: AdminContext, kit: WriteKit, kind: ItemKind): void {
  app.post(
    `/v1/${kind}/:id/cancel`,
    {
      preValidation: emptyBodyIsObject,
      schema: {
        tags: [kind],
        summary: `Cancel a pending ${KINDS[kind].noun}: pending → failed with failed_reason "cancelled"`,
        params: IdParams,
        body: ReasonBody,
        response: { 200: ActionResult, ...errors(400, 401, 404, 409) },
      },
    },
    async (req) => {
      const startedAt = ctx.clock();
      const reason = req.body.reason ?? null;
      return kit.act(req, startedAt, async (s) => {
        const row = await kit.lockOne(s, 'cancel', kind, req.params.id, 'pending', 'RELAY_ADMIN_NOT_PENDING');
        if ('refused' in row) return row;
        const moved = await ctx.actions.cancelPending(s.db, kind, [row.id], { actor: req.actor!, reason });
        const auditId = await kit.audit(s, 'cancel', {
          kind,
          subjectId: row.id,
          subjectKey: row.key,
          details: { reason, count: moved.length },
        });
        return { id: row.id, state: moved[0]?.state ?? 'failed', audit_id: auditId };
      });
    },
  );
}
