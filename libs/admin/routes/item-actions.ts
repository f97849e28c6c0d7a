import { Type } from '@sinclair/typebox';
import type { AdminContext } from '../context';
import { ItemKind, KINDS } from '../kinds';
import { WORK_TYPES } from '../../queue/work-types';
import { ListFilter, itemsSelectFailed } from '../queries';
import { BotIdFilter, chatFilterFor, ErrorText, errors, IdParams, MethodFilter } from '../schemas';
import { ActionResult, emptyBodyIsObject, Reason, ReasonBody, WriteApp, WriteKit } from './write-kit';

/** The bulk retry's body (the route's schema, whose chat filter exists for some kinds only). */
type BulkRetryBody = ListFilter & { limit?: number; dry_run?: boolean; reason?: string };

/** POST /v1/<kind>/:id/retry, /v1/<kind>/retry and (where the kind's model allows it) /v1/<kind>/:id/cancel. */
export function registerItemActions(app: WriteApp, ctx: AdminContext, kit: WriteKit, kind: ItemKind): void {
  registerRetryOne(app, ctx, kit, kind);
  registerRetryBulk(app, ctx, kit, kind);
  if (WORK_TYPES[kind].model.cancelFrom.length > 0) registerCancel(app, ctx, kit, kind);
}

/** What differs between the two single-item actions: everything else (lock, refusal, audit) is shared. */
interface OneItemAction {
  action: 'retry' | 'cancel';
  summary: string;
  /** The state the item must be in, and the refusal when it is not. */
  from: 'failed' | 'pending';
  refusal: 'RELAY_ADMIN_NOT_FAILED' | 'RELAY_ADMIN_NOT_PENDING';
  /** The state answered when the move returned no row. */
  to: string;
  /** Which of the admin actions moves the item (they share one signature). */
  move: 'retryFailed' | 'cancelPending';
}

function registerRetryOne(app: WriteApp, ctx: AdminContext, kit: WriteKit, kind: ItemKind): void {
  registerOneItemAction(app, ctx, kit, kind, {
    action: 'retry',
    summary: `Retry a failed ${KINDS[kind].noun} now: failed → pending, attempt budget renewed`,
    from: 'failed',
    refusal: 'RELAY_ADMIN_NOT_FAILED',
    to: 'pending',
    move: 'retryFailed',
  });
}

function registerCancel(app: WriteApp, ctx: AdminContext, kit: WriteKit, kind: ItemKind): void {
  registerOneItemAction(app, ctx, kit, kind, {
    action: 'cancel',
    summary: `Cancel a pending ${KINDS[kind].noun}: pending → failed with failed_reason "cancelled"`,
    from: 'pending',
    refusal: 'RELAY_ADMIN_NOT_PENDING',
    to: 'failed',
    move: 'cancelPending',
  });
}

function registerOneItemAction(
  app: WriteApp,
  ctx: AdminContext,
  kit: WriteKit,
  kind: ItemKind,
  a: OneItemAction,
): void {
  app.post(
    `/v1/${kind}/:id/${a.action}`,
    {
      preValidation: emptyBodyIsObject,
      schema: {
        tags: [kind],
        summary: a.summary,
        params: IdParams,
        body: ReasonBody,
        response: { 200: ActionResult, ...errors(400, 401, 404, 409) },
      },
    },
    async (req) => {
      const reason = req.body.reason ?? null;
      return kit.act(req, async (s) => {
        const row = await kit.lockOne(s, a.action, kind, req.params.id, a.from, a.refusal);
        if ('refused' in row) return row;
        const moved = await ctx.actions[a.move](s.db, kind, [row.id], { actor: req.actor!, reason });
        const auditId = await kit.audit(s, a.action, {
          kind,
          subjectId: row.id,
          subjectKey: row.key,
          details: { reason, count: moved.length },
        });
        return { id: row.id, state: moved[0]?.state ?? a.to, audit_id: auditId };
      });
    },
  );
}

function bulkRetryBody(ctx: AdminContext, kind: ItemKind) {
  return Type.Object(
    {
      state: Type.Optional(Type.Literal('failed', { description: 'only failed rows can be retried' })),
      ...(KINDS[kind].chatColumns.length ? { chat: Type.Optional(chatFilterFor(kind)) } : {}),
      ...(kind === 'outbound' ? { method: Type.Optional(MethodFilter) } : {}),
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
      const { limit = ctx.bulkLimit, dry_run = false, reason, state: _state, ...filter } = req.body as BulkRetryBody;
      return kit.act(req, async (s) => {
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
