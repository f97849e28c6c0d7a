import type { Pool } from 'pg';
import { migrationStatus } from '../db/migrate';
import { configProblemsList } from '../queue/config-problems';
import { read } from './db';
import { withTimeout } from '../lifecycle/timers';
import { READY_CHECK_TIMEOUT_MS } from '../observability/metrics-server';
import { errorMessage } from '../errors';

/** What libs/ingress's `ingressHealth` reports about one bot's poller (the fields used here). */
export interface IngressHealth {
  ready: boolean;
  reasons: string[];
  generation: number | null;
  owner: string | null;
}
export type IngressHealthFn = (
  pool: Pool,
  botId: string,
  opts: { pollTimeoutMs: number; now?: Date },
) => Promise<IngressHealth>;

export interface Readiness {
  ready: boolean;
  reasons: string[];
  checks: {
    database: { ok: boolean; error?: string };
    migrations: { ok: boolean; pending: number[] };
    ingress: { bot_id: string; ready: boolean; reasons: string[]; generation: number | null; owner: string | null }[];
    /**
     * Configuration problems workers recorded (relay.config_problems): a collector or the Bot API
     * answering as if the configuration were wrong. Items are kept and retried; fix the setting.
     */
    delivery: {
      component: string;
      bot_id: string;
      code: string;
      status: number | null;
      reason: string;
      since: Date;
      last_seen_at: Date;
      occurrences: number;
    }[];
  };
}

export interface ReadinessDeps {
  pool: Pool;
  clock: () => Date;
  ingressHealth: IngressHealthFn;
  pollTimeoutMs: number;
  /** Bots to check; undefined: every bot with a cursor row (at least one must exist). */
  botIds?: string[];
  /** Optional: the SQL directory migrations are compared with (tests). */
  sqlDir?: string;
}

/**
 * Database reachable, migrations current, each bot's current poller generation progressing, and no
 * delivery configuration problem recorded by a worker (relay.config_problems).
 */
export function readinessChecker(deps: ReadinessDeps): () => Promise<Readiness> {
  let migrationsCurrent = false; // once current, they stay current for this process's SQL files
  return async () => {
    const now = deps.clock();
    const out: Readiness = {
      ready: false,
      reasons: [],
      checks: { database: { ok: false }, migrations: { ok: false, pending: [] }, ingress: [], delivery: [] },
    };
    try {
      await withTimeout(deps.pool.query('select 1'), READY_CHECK_TIMEOUT_MS, 'the database');
      out.checks.database.ok = true;
    } catch (err) {
      out.checks.database.error = errorMessage(err) ?? String(err);
      out.reasons.push(`database unreachable: ${errorMessage(err) ?? String(err)}`);
      return out;
    }
    try {
      if (!migrationsCurrent) {
        const st = await withTimeout(
          migrationStatus(deps.pool, deps.sqlDir),
          READY_CHECK_TIMEOUT_MS,
          'the migration check',
        );
        migrationsCurrent = st.current;
        out.checks.migrations.pending = st.pending;
        if (!st.current) out.reasons.push(`migrations pending: ${st.pending.join(', ')} (run tg-relay migrate)`);
      }
      out.checks.migrations.ok = migrationsCurrent;
      let bots = deps.botIds;
      if (!bots) {
        bots = (await read<{ bot_id: string }>(deps.pool, 'select bot_id from relay.cursor order by bot_id')).map(
          (r) => r.bot_id,
        );
        if (bots.length === 0) out.reasons.push('no poller has recorded a cursor yet');
      }
      for (const botId of bots) {
        const h = await withTimeout(
          deps.ingressHealth(deps.pool, botId, { pollTimeoutMs: deps.pollTimeoutMs, now }),
          READY_CHECK_TIMEOUT_MS,
          'the ingress health check',
        );
        out.checks.ingress.push({
          bot_id: botId,
          ready: h.ready,
          reasons: h.reasons,
          generation: h.generation,
          owner: h.owner,
        });
        for (const r of h.reasons) out.reasons.push(`bot ${botId}: ${r}`);
        if (!h.ready && h.reasons.length === 0) out.reasons.push(`bot ${botId}: ingress not ready`);
      }
      if (migrationsCurrent) {
        const problems = await withTimeout(configProblemsList(deps.pool), READY_CHECK_TIMEOUT_MS, 'the delivery check');
        for (const p of problems) {
          out.checks.delivery.push({
            component: p.component,
            bot_id: p.botId,
            code: p.code,
            status: p.status ?? null,
            reason: p.reason,
            since: p.since,
            last_seen_at: p.lastSeenAt,
            occurrences: p.occurrences,
          });
          const who =
            p.component === 'capture'
              ? 'capture delivery'
              : `${p.component} delivery${p.botId ? ` (bot ${p.botId})` : ''}`;
          out.reasons.push(`${who}: ${p.reason} (since ${p.since.toISOString()}, ${p.occurrences} attempts deferred)`);
        }
      }
    } catch (err) {
      out.reasons.push(errorMessage(err) ?? String(err));
    }
    out.ready = out.reasons.length === 0;
    return out;
  };
}
