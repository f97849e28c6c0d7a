import { Type } from '@sinclair/typebox';
import type { AdminContext } from '../context';
import { CaptureKeyConflictError } from '../../captures/errors';
import { errorCode } from '../../errors';
import { AdminError, notFound } from '../errors';
import { StillUndecodableError } from '../quarantine-release';
import { QuarantineLockRow, quarantineLock, quarantineResolve } from '../queries';
import { errors, IdParams } from '../schemas';
import { ActionScope, emptyBodyIsObject, ReasonBody, Refusal, WriteApp, WriteKit } from './write-kit';

type QuarantineAction = 'release' | 'discard';
type QuarantineResult = { id: number; state: string; audit_id: number; [field: string]: unknown };

const SUMMARY: Record<QuarantineAction, string> = {
  release:
    'Release a quarantined update: re-decode it and persist it through the normal ingress path (inbox, capture, jobs)',
  discard: 'Discard a quarantined update: marked discarded, its bytes kept',
};

/** POST /v1/quarantine/:id/release and /v1/quarantine/:id/discard. */
export function registerQuarantineActions(app: WriteApp, ctx: AdminContext, kit: WriteKit): void {
  for (const action of ['release', 'discard'] as const) {
    app.post(
      `/v1/quarantine/:id/${action}`,
      {
        preValidation: emptyBodyIsObject,
        schema: {
          tags: ['quarantine'],
          summary: SUMMARY[action],
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
        const reason = req.body.reason ?? null;
        return kit.act(req, async (s) => {
          const row = await quarantineLock(s.db, req.params.id);
          let refused: AdminError | undefined;
          if (!row) refused = notFound('quarantined update', req.params.id);
          else if (row.state !== 'quarantined')
            refused = new AdminError(
              'RELAY_ADMIN_NOT_QUARANTINED',
              `quarantined update ${row.id} is already ${row.state}`,
              { id: String(row.id), state: row.state },
            );
          if (refused)
            return kit.refuse(s, action, {
              kind: 'quarantine',
              subjectId: req.params.id,
              subjectKey: row?.sha256,
              refused,
            });
          return action === 'discard' ? discard(kit, s, row!, reason) : release(ctx, kit, s, row!, reason);
        });
      },
    );
  }
}

async function discard(kit: WriteKit, s: ActionScope, row: QuarantineLockRow, reason: string | null) {
  await quarantineResolve(s.db, row.id, 'discarded');
  const auditId = await kit.audit(s, 'discard', {
    kind: 'quarantine',
    subjectId: row.id,
    subjectKey: row.sha256,
    details: { reason },
  });
  return { id: row.id, state: 'discarded', audit_id: auditId };
}

async function release(
  ctx: AdminContext,
  kit: WriteKit,
  s: ActionScope,
  row: QuarantineLockRow,
  reason: string | null,
): Promise<QuarantineResult | Refusal> {
  // a savepoint keeps the audit row of a release that the decoder refused
  await s.db.query('savepoint release');
  try {
    const r = await ctx.actions.releaseQuarantined(s.db, {
      id: row.id,
      bot_id: row.bot_id,
      raw: row.raw,
      generation: row.generation,
    });
    await quarantineResolve(s.db, row.id, 'released');
    const auditId = await kit.audit(s, 'release', {
      kind: 'quarantine',
      subjectId: row.id,
      subjectKey: row.sha256,
      details: { reason, ...r },
    });
    return { id: row.id, state: 'released', audit_id: auditId, ...r };
  } catch (err) {
    await s.db.query('rollback to savepoint release');
    const code = errorCode(err);
    const text = err instanceof Error ? err.message : String(err);
    let message: string;
    if (err instanceof StillUndecodableError) message = `the update still does not decode: ${text}`;
    else if (err instanceof CaptureKeyConflictError) message = 'its capture key is already stored with different data';
    else throw err;
    const failed = new AdminError(
      'RELAY_ADMIN_RELEASE_FAILED',
      message,
      { id: String(row.id), cause: code },
      { cause: err },
    );
    return kit.refuse(s, 'release', { kind: 'quarantine', subjectId: row.id, subjectKey: row.sha256, refused: failed });
  }
}
