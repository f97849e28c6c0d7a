import type { Pool, PoolClient } from 'pg';
import type { JobLedger } from '../db/boss';
import type { Config } from '../config';
import type { Logger } from '../observability/logger';
import { AdminError } from './errors';
import type { ItemKind } from './kinds';
import { enqueueOutbound, OutboundMessageInput, OutboundValidationError } from '../outbound';
import { outboundAfterRecover } from '../outbound/send-kind';
import { botIdFromToken } from '../config';
import { createRescuer, registryRescueTargets, type Rescuer } from '../queue/rescuer';
import { WORK_TYPES } from '../queue/work-types';
import { cancelPending, requeueFailed } from '../queue/operator-actions';
import { releaseQuarantinedUpdate } from './quarantine-release';

/** A row an action moved, as the route reports it. */
export interface MovedRow {
  id: number;
  state: string;
}

export type { OutboundMessageInput };

export interface ReleaseResult {
  /** What the ingress path did with the re-decoded update. */
  outcome: 'persisted' | 'duplicate';
  update_id: number;
  inbox_id: number | null;
}

/**
 * The mutations behind the write routes. They run on the route's transaction (`db`), which also
 * locks the rows, checks their state and writes the audit row, so an action and its audit commit
 * together. Defaults are built from the worker engine (libs/queue), libs/outbound and libs/ingress;
 * tests may replace any of them.
 */
export interface AdminActions {
  /** failed → pending, due now, attempt budget renewed, a live ledger job; returns the rows moved. */
  retryFailed(
    db: PoolClient,
    kind: ItemKind,
    ids: number[],
    why: { actor: string; reason: string | null },
  ): Promise<MovedRow[]>;
  /** pending → failed with failed_reason `cancelled` (its ledger job cancelled); returns the rows moved. */
  cancelPending(
    db: PoolClient,
    kind: ItemKind,
    ids: number[],
    why: { actor: string; reason: string | null },
  ): Promise<MovedRow[]>;
  /** delivering claims without a heartbeat for `olderThanMs` → pending now (own transactions); returns how many. */
  recoverStale(kind: ItemKind, olderThanMs: number, workerId: string): Promise<number>;
  /** Re-decodes a quarantined update and persists it through the normal ingress path. */
  releaseQuarantined(
    db: PoolClient,
    row: { id: number; bot_id: string; raw: Buffer; generation: number | null },
  ): Promise<ReleaseResult>;
  /** Idempotent enqueue by msg_id: created, or the same message again; a different payload throws RELAY_OUTBOUND_CONFLICT. */
  enqueueMessage(db: PoolClient, msg: OutboundMessageInput): Promise<{ created: boolean; id: number }>;
}

export interface ActionDeps {
  pool: Pool;
  boss: JobLedger;
  config: Config;
  logger: Logger;
  clock: () => Date;
}

/** The actions wired to the libraries that implement them. */
export function defaultActions(deps: ActionDeps): AdminActions {
  const botId = deps.config.TELEGRAM_BOT_TOKEN ? botIdFromToken(deps.config.TELEGRAM_BOT_TOKEN) : null;
  // The rescuer is the workers' own stale recovery (fencing, budgets, ledger jobs, audit rows, and
  // for outbound the at-most-once rule and alerts) over the registry's tables: the admin API only
  // triggers it now. Recovery is about dead workers, so it needs no bot and no rate limiter.
  let rescuer: Rescuer | undefined;
  const rescuerOf = () =>
    (rescuer ??= createRescuer({
      pool: deps.pool,
      boss: deps.boss,
      logger: deps.logger,
      targets: registryRescueTargets({
        outbound: outboundAfterRecover({
          opsChatId: deps.config.OPS_CHAT_ID ?? null,
          alertsEnabled: deps.config.META_ALERT_ON_DROP,
          alertCoalesceMs: deps.config.ALERT_COALESCE,
        }),
      }),
    }));
  return {
    async retryFailed(db, kind, ids) {
      const moved = await requeueFailed(db, deps.boss, {
        table: kind,
        queue: WORK_TYPES[kind].queue,
        ids,
        budget: deps.config.RETRY_MAX_ATTEMPTS,
      });
      return moved.map((m) => ({ id: Number(m.id), state: m.state }));
    },
    async cancelPending(db, kind, ids) {
      if (WORK_TYPES[kind].model.cancelFrom.length === 0)
        throw new AdminError('RELAY_ADMIN_BAD_REQUEST', `${WORK_TYPES[kind].noun.many} cannot be cancelled`);
      const moved = await cancelPending(db, deps.boss, { table: kind, queue: WORK_TYPES[kind].queue, ids });
      return moved.map((m) => ({ id: Number(m.id), state: m.state }));
    },
    recoverStale: (kind, olderThanMs, workerId) =>
      rescuerOf().rescue(kind, { staleMs: olderThanMs, maxAttempts: deps.config.RETRY_MAX_ATTEMPTS, workerId }),
    releaseQuarantined: (db, row) =>
      releaseQuarantinedUpdate(db, deps.boss, row, {
        allowedChatIds: new Set(deps.config.ALLOWED_CHAT_IDS.map(String)),
        dispatchUnauthorized: deps.config.DISPATCH_UNAUTHORIZED,
      }),
    async enqueueMessage(db, msg) {
      try {
        // bot and default chat: the configured bot, else relay.outbound_settings (written by workers)
        const r = await enqueueOutbound(db, deps.boss, msg, { botId, defaultChatId: deps.config.OPS_CHAT_ID ?? null });
        return { created: r.created, id: Number(r.id) };
      } catch (err) {
        if (err instanceof OutboundValidationError) {
          const p = err.problems[0];
          throw new AdminError(
            'RELAY_ADMIN_VALIDATION',
            `body.${p.field} ${p.problem}`,
            {
              field: `body.${p.field}`,
              errors: err.problems.map((x) => ({ field: `body.${x.field}`, message: x.problem })),
            },
            { cause: err },
          );
        }
        throw err;
      }
    },
  };
}
