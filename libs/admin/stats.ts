import type { Pool } from 'pg';
import { ITEM_KINDS, KINDS, ListKind } from './kinds';
import {
  attemptsRecent,
  chatStatusCountsOfBot,
  cursorList,
  DONE_STATE_SKIP_ABOVE,
  EXACT_COUNT_CAP,
  stateCountExact,
  statsCounts,
  statsEstimates,
} from './queries';
import type { IngressHealthFn } from './health';
import { chatStatusCounts } from '../outbound/queries';
import { CHAT_STATUSES } from '../outbound/classify-response';
import type { PendingUpdatesSource } from './webhook-info';

export interface StateCount {
  count: number;
  /** True when the count is the planner's estimate (the state held more than EXACT_COUNT_CAP rows). */
  approximate: boolean;
}

export interface KindStats {
  queue: string | null;
  states: Record<string, StateCount>;
  total: StateCount;
  oldest_pending_at: string | null;
  oldest_pending_age_seconds: number | null;
  attempts_last_minute: number;
  delivered_last_minute: number;
  failed_last_minute: number;
  delivery_rate_per_second: number;
}

export interface BotStats {
  bot_id: string;
  next_offset: number;
  lease_owner: string | null;
  lease_generation: number;
  lease_expires_at: string | null;
  lease_valid: boolean;
  progress_generation: number | null;
  progress_at: string | null;
  progress_age_seconds: number | null;
  halted_reason: string | null;
  halted_at: string | null;
  /** Telegram's count of updates not yet confirmed (getWebhookInfo), when known. */
  pending_update_count: number | null;
  pending_update_count_at: string | null;
  ready: boolean | null;
  reasons: string[];
}

export interface Stats {
  generated_at: string;
  exact_count_cap: number;
  kinds: Record<string, KindStats>;
  quarantine: { states: Record<string, StateCount> };
  /** Chats the bot cannot reach (relay.chat_status), per status: every status, 0 when none. */
  chat_status: Record<string, number>;
  bots: BotStats[];
}

export interface StatsDeps {
  pool: Pool;
  clock: () => Date;
  ingressHealth?: IngressHealthFn;
  pendingUpdates?: PendingUpdatesSource;
  pollTimeoutMs: number;
}

type Estimates = Awaited<ReturnType<typeof statsEstimates>>;
/** Planner statistics change only at ANALYZE: re-reading them this often loses nothing. */
export const ESTIMATES_TTL_MS = 30_000;

const ageSeconds = (now: Date, iso: string | null) =>
  iso ? Math.max(0, (now.getTime() - Date.parse(iso)) / 1000) : null;
const tableOf = (kind: ListKind) => KINDS[kind].table.replace('relay.', '');

/**
 * Rows of `kind` in `state` by the planner's statistics; with `botId`, that bot's share of them
 * (state and bot taken as independent, as the planner takes them).
 */
function estimate(est: Estimates, kind: ListKind, state: string, botId?: string): number | undefined {
  const e = est[tableOf(kind)];
  const freq = e?.freqs[state];
  if (!e || e.rows <= 0 || freq === undefined) return undefined;
  const share = botId === undefined ? 1 : (e.bots.freqs[botId] ?? e.bots.other);
  return Math.round(e.rows * freq * share);
}

/**
 * GET /v1/stats[?bot_id=]. Per (kind, state) the count is exact up to EXACT_COUNT_CAP (an index scan capped
 * at cap+1 entries); a larger state is reported as reltuples × its most-common-value frequency
 * (`approximate: true`). Terminal-success states (delivered, handled) that the statistics already
 * put above DONE_STATE_SKIP_ABOVE are not scanned at all: they only grow. With a bot, every count,
 * rate, cursor and chat status is that bot's; its done state is not scanned when the whole table's
 * is that large either (the bot's rows are filtered out of the `(state, time)` index, so the scan
 * would read the other bots' rows), and is then the bot's share of the estimate. Concurrent calls
 * (for the same bot) share one computation.
 */
export function statsCollector(deps: StatsDeps): (botId?: string) => Promise<Stats> {
  let estimates: { value: Estimates; at: number } | undefined;
  const inflight = new Map<string, Promise<Stats>>();

  const getEstimates = async (): Promise<Estimates> => {
    const now = Date.now();
    if (!estimates || now - estimates.at > ESTIMATES_TTL_MS)
      estimates = { value: await statsEstimates(deps.pool), at: now };
    return estimates.value;
  };

  const collect = async (botId: string | undefined): Promise<Stats> => {
    const now = deps.clock();
    const kinds: ListKind[] = [...ITEM_KINDS, 'quarantine'];
    const est = await getEstimates();
    const skip = new Set<string>();
    for (const kind of kinds) {
      const done = KINDS[kind].doneState;
      if (done && (estimate(est, kind, done) ?? 0) > DONE_STATE_SKIP_ABOVE) skip.add(`${kind}.${done}`);
    }
    const [raw, recent, cursors, unreachable] = await Promise.all([
      statsCounts(deps.pool, kinds, skip, botId),
      attemptsRecent(deps.pool, new Date(now.getTime() - 60_000), botId),
      cursorList(deps.pool, botId),
      botId ? chatStatusCountsOfBot(deps.pool, botId) : chatStatusCounts(deps.pool),
    ]);
    const counts: Record<string, Record<string, StateCount>> = {};
    for (const kind of kinds) {
      counts[kind] = {};
      for (const state of KINDS[kind].states) {
        const key = `${kind}.${state}`;
        const n = skip.has(key) ? Infinity : Number(raw[key]);
        if (n <= EXACT_COUNT_CAP) {
          counts[kind][state] = { count: n, approximate: false };
          continue;
        }
        const e =
          estimate(est, kind, state, botId) ??
          estimate((estimates = { value: await statsEstimates(deps.pool), at: Date.now() }).value, kind, state, botId);
        // a counted state is known to be above the cap; a skipped one of a bot may hold fewer rows
        const floor = skip.has(key) ? 0 : EXACT_COUNT_CAP + 1;
        counts[kind][state] =
          e !== undefined
            ? { count: Math.max(floor, e), approximate: true }
            : // never analyzed, no estimate to give: count (slow on a big table; autovacuum fixes it)
              { count: await stateCountExact(deps.pool, kind, state, botId), approximate: false };
      }
    }
    const out: Stats = {
      generated_at: now.toISOString(),
      exact_count_cap: EXACT_COUNT_CAP,
      kinds: {},
      quarantine: { states: counts.quarantine },
      chat_status: Object.fromEntries(CHAT_STATUSES.map((st) => [st, unreachable[st] ?? 0])),
      bots: [],
    };
    for (const kind of ITEM_KINDS) {
      const spec = KINDS[kind];
      const r = recent.find((x) => x.subject === spec.subject);
      const states = counts[kind];
      const total = Object.values(states).reduce(
        (a, s) => ({ count: a.count + s.count, approximate: a.approximate || s.approximate }),
        {
          count: 0,
          approximate: false,
        },
      );
      const oldest = (raw[`${kind}.oldest`] as string | null) ?? null;
      out.kinds[kind] = {
        queue: spec.queue ?? null,
        states,
        total,
        oldest_pending_at: oldest,
        oldest_pending_age_seconds: ageSeconds(now, oldest),
        attempts_last_minute: r?.attempts ?? 0,
        delivered_last_minute: r?.delivered ?? 0,
        failed_last_minute: r?.failed ?? 0,
        delivery_rate_per_second: Math.round(((r?.delivered ?? 0) / 60) * 1000) / 1000,
      };
    }
    out.bots = await Promise.all(
      cursors.map(async (c): Promise<BotStats> => {
        const health = deps.ingressHealth
          ? await deps
              .ingressHealth(deps.pool, c.bot_id, { pollTimeoutMs: deps.pollTimeoutMs, now })
              .catch(() => undefined)
          : undefined;
        const pending = deps.pendingUpdates?.peek(c.bot_id);
        return {
          bot_id: c.bot_id,
          next_offset: c.next_offset,
          lease_owner: c.lease_owner,
          lease_generation: c.lease_generation,
          lease_expires_at: c.lease_expires_at,
          lease_valid: !!c.lease_owner && !!c.lease_expires_at && Date.parse(c.lease_expires_at) > now.getTime(),
          progress_generation: c.progress_generation,
          progress_at: c.progress_at,
          progress_age_seconds: ageSeconds(now, c.progress_at),
          halted_reason: c.halted_reason,
          halted_at: c.halted_at,
          pending_update_count: pending?.count ?? null,
          pending_update_count_at: pending?.at ?? null,
          ready: health ? health.ready : null,
          reasons: health?.reasons ?? [],
        };
      }),
    );
    return out;
  };

  return (botId?: string) => {
    const key = botId ?? '';
    let p = inflight.get(key);
    if (!p) {
      p = collect(botId).finally(() => inflight.delete(key));
      inflight.set(key, p);
    }
    return p;
  };
}
