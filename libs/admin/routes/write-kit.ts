import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type {
  FastifyBaseLogger,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import type { PoolClient } from 'pg';
import { withTransaction } from '../../db/pool';
import type { AdminContext } from '../context';
import { inSpan, trace } from '../../observability/tracing';
import { AdminError, notFound } from '../errors';
import { ItemKind, KINDS } from '../kinds';
import { auditInsert, itemLock } from '../queries';

/** The instance a write-route family registers on: the write plugin's own (TypeBox-typed) instance. */
export type WriteApp = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

export const Reason = Type.String({ minLength: 1, maxLength: 500, description: 'why (kept in the audit trail)' });
export const ReasonBody = Type.Object({ reason: Type.Optional(Reason) }, { additionalProperties: false });
export const ActionResult = Type.Object(
  { id: Type.Integer(), state: Type.String(), audit_id: Type.Integer() },
  { additionalProperties: true },
);

/** Routes whose body is optional: an absent body counts as `{}`. */
export const emptyBodyIsObject = (req: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
  if (req.body === undefined || req.body === null) req.body = {};
  done();
};

export type Refusal = { refused: AdminError; auditId: number };
/** Typed as a Refusal (not an object literal) so `act` can tell it from the route's own result. */
const refusal = (refused: AdminError, auditId: number): Refusal => ({ refused, auditId });

/** One admin action under way: its transaction, the request it answers and when it started (the audit row's start). */
export interface ActionScope {
  db: PoolClient;
  req: FastifyRequest;
  startedAt: Date;
}

/** What an audit row says about its subject, and the refusal when the action was refused. */
export interface AuditSubject {
  kind?: string;
  subjectId?: number | null;
  subjectKey?: string | null;
  details?: Record<string, unknown>;
  refused?: AdminError;
}

/** A locked work row (captures, inbox, outbound…): its id, state and natural key. */
export type LockedItem = { id: number; state: string; key: string };

/** The request helpers every write route shares: transaction, audit row, audited refusal and row lock. */
export interface WriteKit {
  /** Appends the audit row (relay.attempts, subject 'admin', actor = token label); returns its id. */
  audit(s: ActionScope, action: string, a: AuditSubject): Promise<number>;
  /** Audits `a.refused` and returns it as a Refusal, which `act` commits and then throws. */
  refuse(s: ActionScope, action: string, a: AuditSubject & { refused: AdminError }): Promise<Refusal>;
  /**
   * Runs `fn` in a transaction (in an `admin.<action>` span), started now; a Refusal is committed (its audit row)
   * and then thrown.
   */
  act<T>(req: FastifyRequest, fn: (s: ActionScope) => Promise<T | Refusal>): Promise<T>;
  /** Locks one row; unknown id or a state other than `expected` becomes an audited refusal. */
  lockOne(
    s: ActionScope,
    action: string,
    kind: ItemKind,
    id: number,
    expected: string,
    code: 'RELAY_ADMIN_NOT_FAILED' | 'RELAY_ADMIN_NOT_PENDING',
  ): Promise<LockedItem | Refusal>;
}

/** The admin action's span (opened by `act`) is named after the action it audits. */
function nameActionSpan(action: string, a: AuditSubject): void {
  const span = trace.getActiveSpan();
  if (!span?.isRecording()) return;
  span.updateName(`admin.${action}`);
  span.setAttributes({ 'tg.admin.action': action, outcome: a.refused ? 'refused' : 'ok' });
  if (a.kind) span.setAttribute('tg.admin.subject_kind', a.kind);
  if (a.subjectId !== undefined && a.subjectId !== null) span.setAttribute('tg.admin.subject_id', a.subjectId);
  if (a.subjectKey) span.setAttribute('tg.admin.subject_key', a.subjectKey);
  if (a.refused) span.setAttribute('error.type', a.refused.code);
}

export function createWriteKit(ctx: AdminContext): WriteKit {
  const audit: WriteKit['audit'] = ({ db, req, startedAt }, action, a) => {
    nameActionSpan(action, a);
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

  const refuse: WriteKit['refuse'] = async (s, action, a) => refusal(a.refused, await audit(s, action, a));

  const act = async <T>(req: FastifyRequest, fn: (s: ActionScope) => Promise<T | Refusal>): Promise<T> => {
    const startedAt = ctx.clock();
    const out = await inSpan('admin.action', {}, () => withTransaction(ctx.pool, (db) => fn({ db, req, startedAt })));
    if (out && typeof out === 'object' && 'refused' in (out as object)) throw (out as Refusal).refused;
    return out as T;
  };

  const lockOne: WriteKit['lockOne'] = async (s, action, kind, id, expected, code) => {
    const row = await itemLock(s.db, kind, id);
    const spec = KINDS[kind];
    const refused = !row
      ? notFound(spec.noun, id)
      : row.state !== expected
        ? new AdminError(code, `${spec.noun} ${id} is ${row.state}, not ${expected}`, {
            id: String(id),
            state: row.state,
          })
        : undefined;
    if (refused) return refuse(s, action, { kind, subjectId: id, subjectKey: row?.key, refused });
    return row!;
  };

  return { audit, refuse, act, lockOne };
}
