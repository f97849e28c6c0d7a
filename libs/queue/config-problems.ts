/**
 * Answers that say the configuration is wrong rather than the item (a collector answering
 * 401/403/404/407 or a redirect; the Bot API answering 401/404 to sendMessage). The item is not at
 * fault, so it is retried with backoff without spending its budget (a wrong CAPTURE_URL must not
 * fail a whole backlog at its first attempt), and the condition is recorded in
 * relay.config_problems (sql/0008) while it lasts, so any admin replica reports it in
 * /health/ready; the next success of the component clears it. A new episode raises one alert
 * (relay.config_problem_record; never for the Bot API itself, which could not carry it).
 */
import type { Queryable } from '../db/pool';
import { safeText } from './errors';

/** 'webhook': Telegram cannot deliver to our webhook (recorded by the ingress owner, libs/ingress/webhook-delivery.ts). */
export type ConfigComponent = 'capture' | 'outbound' | 'webhook';

export interface ConfigProblem {
  component: ConfigComponent;
  /** The bot whose delivery is affected ('' when not bot-specific). */
  botId: string;
  /** HTTP_401, HTTP_302, TELEGRAM_404… */
  code: string;
  status?: number;
  /** What is wrong and what to check. Never item content. */
  reason: string;
}

export interface ConfigProblemRow extends ConfigProblem {
  since: Date;
  lastSeenAt: Date;
  occurrences: number;
  workerId: string | null;
  alertId: string | null;
}

/** A row of relay.config_problems as configProblemsList selects it. */
interface ConfigProblemDbRow {
  component: ConfigComponent;
  bot_id: string;
  code: string;
  status: number | null;
  reason: string;
  since: Date;
  last_seen_at: Date;
  /** bigint, as text. */
  occurrences: string;
  worker_id: string | null;
  /** bigint, as text. */
  alert_id: string | null;
}

/** Records one occurrence; a new episode may raise its alert (see sql/0008). */
export async function configProblemRecord(
  db: Queryable,
  p: ConfigProblem,
  opts: { workerId?: string | null; opsChatId?: string | null } = {},
): Promise<{ newEpisode: boolean; alertId: string | null }> {
  // alert_id is a bigint: pg returns it as text
  const { rows } = await db.query<{ new_episode: boolean | null; alert_id: string | null }>(
    'select new_episode, alert_id from relay.config_problem_record($1, $2, $3, $4, $5, $6, $7)',
    [
      p.component,
      p.botId,
      safeText(p.code, 40),
      p.status ?? null,
      safeText(p.reason, 1_000),
      opts.workerId ?? null,
      opts.opsChatId ?? null,
    ],
  );
  return {
    newEpisode: rows[0]?.new_episode === true,
    alertId: rows[0]?.alert_id == null ? null : String(rows[0].alert_id),
  };
}

/** The component works again: the episode ends. Returns whether one was open. */
/**
 * The same delete as a step of a settle statement (ClaimVariant.settledStep): the component's problem
 * ends when anything in the CTE `settled` was delivered.
 */
export function configProblemClearSql(p: (v: unknown) => string, component: ConfigComponent, botId: string): string {
  return `delete from relay.config_problems
           where component = ${p(component)} and bot_id = ${p(botId)} and exists (select 1 from settled where state = 'delivered')`;
}

export async function configProblemClear(db: Queryable, component: ConfigComponent, botId: string): Promise<boolean> {
  const { rowCount } = await db.query('delete from relay.config_problems where component = $1 and bot_id = $2', [
    component,
    botId,
  ]);
  return (rowCount ?? 0) > 0;
}

export async function configProblemsList(db: Queryable): Promise<ConfigProblemRow[]> {
  const { rows } = await db.query<ConfigProblemDbRow>(
    `select component, bot_id, code, status, reason, since, last_seen_at, occurrences, worker_id, alert_id::text as alert_id
       from relay.config_problems order by since`,
  );
  return rows.map((r) => ({
    component: r.component,
    botId: r.bot_id,
    code: r.code,
    ...(r.status === null ? {} : { status: r.status }),
    reason: r.reason,
    since: r.since,
    lastSeenAt: r.last_seen_at,
    occurrences: Number(r.occurrences),
    workerId: r.worker_id,
    alertId: r.alert_id,
  }));
}

/**
 * Per kind and process: how many config-problem outcomes in a row (the backoff step of the next
 * one, so a misconfigured component is retried ever more slowly up to RETRY_CAP), reset by a success.
 */
export class ConfigStreak {
  private n = 0;
  failed(): number {
    return ++this.n;
  }
  succeeded(): void {
    this.n = 0;
  }
  get current(): number {
    return this.n;
  }
}
