import { Type } from '@sinclair/typebox';
import { OUTBOUND_MSG_ID_MAX, OUTBOUND_TEXT_MAX } from '../../outbound/message';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import type { PoolClient } from 'pg';
import { parseDuration } from '../../config/duration';
import { withTransaction } from '../../db/pool';
import type { AdminContext } from '../context';
import { currentTraceparent, inSpan, isValidTraceparent, trace } from '../../observability/tracing';
import { AdminError, notFound } from '../errors';
import { ITEM_KINDS, ItemKind, KINDS } from '../kinds';
import { WORK_TYPES } from '../../queue/work-types';
import { auditInsert, ListFilter, itemLock, itemsSelectFailed, quarantineLock, quarantineResolve } from '../queries';
import {
  BotIdFilter,
  CHANNEL_PATTERN,
  CHAT_ID_PATTERN,
  chatFilterFor,
  ErrorText,
  errors,
  IdParams,
  TelegramId,
} from '../schemas';

const Reason = Type.String({ minLength: 1, maxLength: 500, description: 'why (kept in the audit trail)' });
const ReasonBody = Type.Object({ reason: Type.Optional(Reason) }, { additionalProperties: false });
const ActionResult = Type.Object(
  { id: Type.Integer(), state: Type.String(), audit_id: Type.Integer() },
  { additionalProperties: true },
);

/** Routes whose body is optional: an absent body counts as `{}`. */
const emptyBodyIsObject = (req: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
  if (req.body === undefined || req.body === null) req.body = {};
  done();
};

/** recover-stale's older_than: at most a year (an interval PostgreSQL and a JS number hold). */
export const RECOVER_OLDER_THAN_MAX_MS = 365 * 24 * 3_600_000;

type Refusal = { refused: AdminError; auditId: number };
/** The bulk retry's body (the route's schema, whose chat filter exists for some kinds only). */
type BulkRetryBody = ListFilter & { limit?: number; dry_run?: boolean; reason?: string };
/** Typed as a Refusal (not an object literal) so `act` can tell it from the route's own result. */
const refusal = (refused: AdminError, auditId: number): Refusal => ({ refused, auditId });

/**
 * The write routes. Each runs one transaction that locks the rows, checks their state, calls the
 * action and appends the audit row (relay.attempts, subject 'admin', actor = token label), so the
 * change and its audit commit together. A refused call (404 unknown id, 409 wrong state) is
 * audited too, then answered with its error.
 */
// eslint-disable-next-line @typescript-eslint/require-await -- a fastify plugin: async so that a route registration that throws rejects register() (a sync throw escapes avvio)
export const writeRoutes: FastifyPluginAsyncTypebox<{ ctx: AdminContext }> = async (app, { ctx }) => {
  const audit = (
    db: PoolClient,
    req: FastifyRequest,
    startedAt: Date,
    action: string,
    a: {
      kind?: string;
      subjectId?: number | null;
      subjectKey?: string | null;
      details?: Record<string, unknown>;
      refused?: AdminError;
    },
  ) => {
    // the admin action's span (opened by `act`) is named after the action it audits
    const span = trace.getActiveSpan();
    if (span?.isRecording()) {
      span.updateName(`admin.${action}`);
      span.setAttributes({ 'tg.admin.action': action, outcome: a.refused ? 'refused' : 'ok' });
      if (a.kind) span.setAttribute('tg.admin.subject_kind', a.kind);
      if (a.subjectId !== undefined && a.subjectId !== null) span.setAttribute('tg.admin.subject_id', a.subjectId);
      if (a.subjectKey) span.setAttribute('tg.admin.subject_key', a.subjectKey);
      if (a.refused) span.setAttribute('error.type', a.refused.code);
    }
    return auditInsert(db, {
      action,
      actor: req.actor ?? 'unknown',
      workerId: ctx.instanceId,
      subjectId: a.subjectId ?? null,
      subjectKey: a.subjectKey ?? null,
      details: {
        kind: a.kind,
        request_id: req.id,
        ...(a.details ?? {}),
        ...(a.refused ? { result: 'refused' } : { result: 'ok' }),
      },
      errorCode: a.refused?.code,
      error: a.refused?.message,
      startedAt,
    });
  };

  /** Runs `fn` in a transaction (in an `admin.<action>` span); a Refusal is committed (its audit row) and then thrown. */
  const act = async <T>(fn: (db: PoolClient) => Promise<T | Refusal>): Promise<T> => {
    const out = await inSpan('admin.action', {}, () => withTransaction(ctx.pool, fn));
    if (out && typeof out === 'object' && 'refused' in (out as object)) throw (out as Refusal).refused;
    return out as T;
  };

  /** Locks one row; unknown id or a state other than `expected` becomes an audited refusal. */
  const lockOne = async (
    db: PoolClient,
    req: FastifyRequest,
    startedAt: Date,
    action: string,
    kind: ItemKind,
    id: number,
    expected: string,
    code: 'RELAY_ADMIN_NOT_FAILED' | 'RELAY_ADMIN_NOT_PENDING',
  ) => {
    const row = await itemLock(db, kind, id);
    const spec = KINDS[kind];
    const refused = !row
      ? notFound(spec.noun, id)
      : row.state !== expected
        ? new AdminError(code, `${spec.noun} ${id} is ${row.state}, not ${expected}`, {
            id: String(id),
            state: row.state,
          })
        : undefined;
    if (refused)
      return refusal(
        refused,
        await audit(db, req, startedAt, action, { kind, subjectId: id, subjectKey: row?.key, refused }),
      );
    return row!;
  };

  for (const kind of ITEM_KINDS) {
    const spec = KINDS[kind];

    app.post(
      `/v1/${kind}/:id/retry`,
      {
        preValidation: emptyBodyIsObject,
        schema: {
          tags: [kind],
          summary: `Retry a failed ${spec.noun} now: failed → pending, attempt budget renewed`,
          params: IdParams,
          body: ReasonBody,
          response: { 200: ActionResult, ...errors(400, 401, 404, 409) },
        },
      },
      async (req) => {
        const startedAt = ctx.clock();
        const reason = req.body.reason ?? null;
        return act(async (db) => {
          const row = await lockOne(
            db,
            req,
            startedAt,
            'retry',
            kind,
            req.params.id,
            'failed',
            'RELAY_ADMIN_NOT_FAILED',
          );
          if ('refused' in row) return row;
          const moved = await ctx.actions.retryFailed(db, kind, [row.id], { actor: req.actor!, reason });
          const auditId = await audit(db, req, startedAt, 'retry', {
            kind,
            subjectId: row.id,
            subjectKey: row.key,
            details: { reason, count: moved.length },
          });
          return { id: row.id, state: moved[0]?.state ?? 'pending', audit_id: auditId };
        });
      },
    );

    app.post(
      `/v1/${kind}/retry`,
      {
        schema: {
          tags: [kind],
          summary: `Bulk retry of failed ${spec.noun}s matching a filter, at most ${ctx.bulkLimit} per call (dry_run counts only)`,
          description:
            'Oldest first. `more: true` means more rows match: call again. Rows another transaction holds are skipped.',
          body: Type.Object(
            {
              state: Type.Optional(Type.Literal('failed', { description: 'only failed rows can be retried' })),
              ...(spec.chatColumns.length ? { chat: Type.Optional(chatFilterFor(kind)) } : {}),
              bot_id: Type.Optional(BotIdFilter),
              since: Type.Optional(Type.String({ format: 'date-time' })),
              until: Type.Optional(Type.String({ format: 'date-time' })),
              error: Type.Optional(ErrorText),
              limit: Type.Optional(Type.Integer({ minimum: 1, maximum: ctx.bulkLimit, default: ctx.bulkLimit })),
              dry_run: Type.Optional(Type.Boolean({ default: false })),
              reason: Type.Optional(Reason),
            },
            { additionalProperties: false },
          ),
          response: {
            200: Type.Object({
              kind: Type.String(),
              dry_run: Type.Boolean(),
              matched: Type.Integer({ description: 'failed rows matched by this call (≤ limit)' }),
              retried: Type.Integer(),
              more: Type.Boolean({ description: 'more matching rows remain beyond this call' }),
              ids: Type.Array(Type.Integer()),
              audit_id: Type.Integer(),
            }),
            ...errors(400, 401),
          },
        },
      },
      async (req) => {
        const startedAt = ctx.clock();
        const { limit = ctx.bulkLimit, dry_run = false, reason, state: _state, ...filter } = req.body as BulkRetryBody;
        return act(async (db) => {
          const { ids, more } = await itemsSelectFailed(db, kind, filter, limit, !dry_run);
          const moved =
            dry_run || ids.length === 0
              ? []
              : await ctx.actions.retryFailed(db, kind, ids, { actor: req.actor!, reason: reason ?? null });
          const movedIds = dry_run ? [] : moved.map((m) => m.id);
          const auditId = await audit(db, req, startedAt, dry_run ? 'retry_bulk_dry_run' : 'retry_bulk', {
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

    if (WORK_TYPES[kind].model.cancelFrom.length > 0) {
      app.post(
        `/v1/${kind}/:id/cancel`,
        {
          preValidation: emptyBodyIsObject,
          schema: {
            tags: [kind],
            summary: `Cancel a pending ${spec.noun}: pending → failed with failed_reason "cancelled"`,
            params: IdParams,
            body: ReasonBody,
            response: { 200: ActionResult, ...errors(400, 401, 404, 409) },
          },
        },
        async (req) => {
          const startedAt = ctx.clock();
          const reason = req.body.reason ?? null;
          return act(async (db) => {
            const row = await lockOne(
              db,
              req,
              startedAt,
              'cancel',
              kind,
              req.params.id,
              'pending',
              'RELAY_ADMIN_NOT_PENDING',
            );
            if ('refused' in row) return row;
            const moved = await ctx.actions.cancelPending(db, kind, [row.id], { actor: req.actor!, reason });
            const auditId = await audit(db, req, startedAt, 'cancel', {
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
  }

  app.post(
    '/v1/recover-stale',
    {
      preValidation: emptyBodyIsObject,
      schema: {
        tags: ['recovery'],
        summary: 'Return delivering work whose worker stopped heartbeating to pending now; counts per kind',
        description:
          'older_than: how long without a heartbeat (a duration like 30s, 5m, or milliseconds; at least 1s; default STALE_AFTER).',
        body: Type.Object(
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
        ),
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
      const raw = req.body.older_than;
      const olderThanMs =
        raw === undefined ? ctx.config.STALE_AFTER : typeof raw === 'number' ? raw : parseDuration(raw);
      if (olderThanMs === undefined || olderThanMs < 1000 || olderThanMs > RECOVER_OLDER_THAN_MAX_MS) {
        throw new AdminError('RELAY_ADMIN_VALIDATION', 'body.older_than must be a duration from 1s to 365 days', {
          field: 'body.older_than',
        });
      }
      const kinds = req.body.kinds ?? [...ITEM_KINDS];
      const recovered: Record<string, number> = {};
      for (const kind of kinds) recovered[kind] = await ctx.actions.recoverStale(kind, olderThanMs, ctx.instanceId);
      const total = Object.values(recovered).reduce((a, b) => a + b, 0);
      const auditId = await withTransaction(ctx.pool, (db) =>
        audit(db, req, startedAt, 'recover_stale', {
          details: { older_than_ms: olderThanMs, kinds, recovered, count: total, reason: req.body.reason ?? null },
        }),
      );
      return { older_than_ms: olderThanMs, recovered, total, audit_id: auditId };
    },
  );

  for (const action of ['release', 'discard'] as const) {
    app.post(
      `/v1/quarantine/:id/${action}`,
      {
        preValidation: emptyBodyIsObject,
        schema: {
          tags: ['quarantine'],
          summary:
            action === 'release'
              ? 'Release a quarantined update: re-decode it and persist it through the normal ingress path (inbox, capture, jobs)'
              : 'Discard a quarantined update: marked discarded, its bytes kept',
          params: IdParams,
          body: ReasonBody,
          response: {
            200: Type.Object({
              id: Type.Integer(),
              state: Type.String(),
              audit_id: Type.Integer(),
              outcome: Type.Optional(Type.String()),
              update_id: Type.Optional(Type.Integer()),
              inbox_id: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
            }),
            ...errors(400, 401, 404, 409),
          },
        },
      },
      async (req) => {
        const startedAt = ctx.clock();
        const reason = req.body.reason ?? null;
        return act(async (db) => {
          const row = await quarantineLock(db, req.params.id);
          let refused: AdminError | undefined;
          if (!row) refused = notFound('quarantined update', req.params.id);
          else if (row.state !== 'quarantined')
            refused = new AdminError(
              'RELAY_ADMIN_NOT_QUARANTINED',
              `quarantined update ${row.id} is already ${row.state}`,
              {
                id: String(row.id),
                state: row.state,
              },
            );
          if (refused)
            return refusal(
              refused,
              await audit(db, req, startedAt, action, {
                kind: 'quarantine',
                subjectId: req.params.id,
                subjectKey: row?.sha256,
                refused,
              }),
            );
          if (action === 'discard') {
            await quarantineResolve(db, row!.id, 'discarded');
            const auditId = await audit(db, req, startedAt, action, {
              kind: 'quarantine',
              subjectId: row!.id,
              subjectKey: row!.sha256,
              details: { reason },
            });
            return { id: row!.id, state: 'discarded', audit_id: auditId };
          }
          // a savepoint keeps the audit row of a release that the decoder refused
          await db.query('savepoint release');
          try {
            const r = await ctx.actions.releaseQuarantined(db, {
              id: row!.id,
              bot_id: row!.bot_id,
              raw: row!.raw,
              generation: row!.generation,
            });
            await quarantineResolve(db, row!.id, 'released');
            const auditId = await audit(db, req, startedAt, action, {
              kind: 'quarantine',
              subjectId: row!.id,
              subjectKey: row!.sha256,
              details: { reason, ...r },
            });
            return { id: row!.id, state: 'released', audit_id: auditId, ...r };
          } catch (err) {
            await db.query('rollback to savepoint release');
            const e = err as Error & { code?: string };
            let message: string;
            if (e.code === 'RELAY_QUARANTINE_UNDECODABLE') message = `the update still does not decode: ${e.message}`;
            else if (e.code === 'RELAY_CAPTURE_KEY_CONFLICT')
              message = 'its capture key is already stored with different data';
            else throw err;
            const failed = new AdminError(
              'RELAY_ADMIN_RELEASE_FAILED',
              message,
              { id: String(row!.id), cause: e.code },
              { cause: err },
            );
            return refusal(
              failed,
              await audit(db, req, startedAt, action, {
                kind: 'quarantine',
                subjectId: row!.id,
                subjectKey: row!.sha256,
                refused: failed,
              }),
            );
          }
        });
      },
    );
  }

  app.post(
    '/v1/messages',
    {
      schema: {
        tags: ['outbound'],
        summary:
          'Enqueue an outbound message, idempotent by msg_id: 201 new, 200 the same message again, 409 same msg_id with a different payload',
        description:
          "chat_id may be omitted for the operators' chat (OPS_CHAT_ID). Text is sent verbatim (the caller owns escaping).",
        body: Type.Object(
          {
            msg_id: Type.String({
              minLength: 1,
              maxLength: OUTBOUND_MSG_ID_MAX,
              description: 'idempotency key, unique for good',
            }),
            chat_id: Type.Optional(
              Type.Union([
                TelegramId('chat id'),
                Type.String({ pattern: `^(${CHAT_ID_PATTERN}|${CHANNEL_PATTERN})$` }),
              ]),
            ),
            text: Type.String({ minLength: 1, maxLength: OUTBOUND_TEXT_MAX }),
            parse_mode: Type.Optional(
              Type.Union([Type.Literal('MarkdownV2'), Type.Literal('HTML'), Type.Literal('Markdown')]),
            ),
            disable_notification: Type.Optional(Type.Boolean()),
            reply_markup: Type.Optional(Type.Object({}, { additionalProperties: true })),
            send_options: Type.Optional(
              Type.Object({}, { additionalProperties: true, description: 'other sendMessage parameters, verbatim' }),
            ),
            delivery: Type.Optional(Type.Union([Type.Literal('at_least_once'), Type.Literal('at_most_once')])),
            max_attempts: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
            bot_id: Type.Optional(BotIdFilter),
            traceparent: Type.Optional(
              Type.String({
                maxLength: 128,
                description:
                  "W3C trace context of the caller's trace (also accepted as the `traceparent` header): the sendMessage spans join it",
              }),
            ),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({
            id: Type.Integer(),
            msg_id: Type.String(),
            created: Type.Boolean(),
            state: Type.String(),
            audit_id: Type.Integer(),
          }),
          201: Type.Object({
            id: Type.Integer(),
            msg_id: Type.String(),
            created: Type.Boolean(),
            state: Type.String(),
            audit_id: Type.Integer(),
          }),
          ...errors(400, 401, 409),
        },
      },
    },
    async (req, reply) => {
      const startedAt = ctx.clock();
      const traceparent = requestTraceparent(req.body.traceparent, req.headers.traceparent);
      const body = {
        ...req.body,
        ...(req.body.chat_id !== undefined ? { chat_id: String(req.body.chat_id) } : {}),
        traceparent,
      };
      const out = await act(async (db) => {
        await db.query('savepoint enqueue');
        try {
          const r = await ctx.actions.enqueueMessage(db, body);
          const auditId = await audit(db, req, startedAt, 'enqueue', {
            kind: 'outbound',
            subjectId: r.id,
            subjectKey: body.msg_id,
            details: { created: r.created, chat_id: body.chat_id },
          });
          const { rows } = await db.query<{ state: string }>('select state from relay.outbound where id = $1', [r.id]);
          return {
            id: r.id,
            msg_id: body.msg_id,
            created: r.created,
            state: String(rows[0]?.state ?? 'pending'),
            audit_id: auditId,
          };
        } catch (err) {
          const code = (err as { code?: string }).code;
          if (code !== 'RELAY_OUTBOUND_CONFLICT') throw err;
          await db.query('rollback to savepoint enqueue');
          const refused = new AdminError(
            'RELAY_OUTBOUND_CONFLICT',
            `msg_id ${body.msg_id} was already enqueued with a different payload`,
            { msg_id: body.msg_id },
            { cause: err },
          );
          return refusal(
            refused,
            await audit(db, req, startedAt, 'enqueue', { kind: 'outbound', subjectKey: body.msg_id, refused }),
          );
        }
      });
      return reply.code(out.created ? 201 : 200).send(out);
    },
  );
};

/**
 * The trace a message enqueued over HTTP joins: the body's `traceparent`, else this
 * request's span when the admin process is traced (its parent is the `traceparent` header, taken by
 * the http instrumentation), else the header itself. A malformed value is a 400, not a silent new trace.
 */
function requestTraceparent(fromBody: string | undefined, header: string | string[] | undefined): string | null {
  for (const [where, v] of [
    ['body field traceparent', fromBody],
    ['header traceparent', header],
  ] as const) {
    if (v !== undefined && !isValidTraceparent(v)) {
      throw new AdminError(
        'RELAY_ADMIN_TRACEPARENT_INVALID',
        `${where} must be a W3C traceparent: 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>, ids not all zero`,
        { field: where.startsWith('body') ? 'traceparent' : 'header:traceparent' },
      );
    }
  }
  return fromBody ?? currentTraceparent() ?? (typeof header === 'string' ? header.trim() : null);
}
