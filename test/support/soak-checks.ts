/**
 * The soak's verdict: compares the database (relay.*, tg_relay_boss.job, soak.handler_runs) with what the
 * Bot API sandbox and the collector recorded, and turns every invariant of the soak into a printed
 * figure. A figure with `ok: false` is a failed invariant; `ok: undefined` is information.
 */
import type { DrainState, SoakContext, SoakOptions } from './soak-run';
import type { ExitRecord } from './soak-fleet';
import { fromUtf16, POISON_DEFAULTS, soakPoisons } from '../fixtures/soak-poison';
import { soakReplyMethods } from '../fixtures/soak-media';
import { checkMedia, isAlbumTail, OutboundRow, rowSendKey, sentKey } from './soak-media-checks';

export interface Figure {
  label: string;
  value: string;
  ok?: boolean;
}

export interface SoakReport {
  seed: number;
  durationMs: number;
  figures: Figure[];
  failures: string[];
  dir?: string;
}

export const SOAK_TOKEN_SECRET = 'soak-token-not-a-secret';
/** The operators' chat (alerts). */
export const OPS_CHAT = 4242;
/** Sends to these chats always fail terminally (Telegram's answers, scripted in the sandbox). */
export const CHAT_NOT_FOUND = 990_001;
export const BLOCKED_CHAT = 990_002;
/** A group that was upgraded to a supergroup: the first send answers migrate_to_chat_id. */
export const MIGRATED_GROUP = -990_003;
export const MIGRATED_TO = -1_009_900_003;
export const TERMINAL_PER_CHAT = 3;
export const MIGRATED_MESSAGES = 2;

/** How often the soak bot replies invalid content (0: not the poison variant). */
function poisonEveryOf(options: Pick<SoakOptions, 'poison' | 'poisonReplyEvery'>): number {
  return options.poison ? (options.poisonReplyEvery ?? POISON_DEFAULTS.poisonReplyEvery) : 0;
}

/** Whether the soak bot makes media replies (the poison variant unless told otherwise). */
export function mediaReplies(options: Pick<SoakOptions, 'poison' | 'media'>): boolean {
  return options.media ?? options.poison === true;
}

/** The relayed calls the soak bot makes for update `u` in its handled attempt, in call order (soak-media.ts). */
export function replyMethodsOf(u: number, options: SoakOptions): string[] {
  return soakReplyMethods(u, {
    echoEvery: options.echoEvery,
    poisonEvery: poisonEveryOf(options),
    media: mediaReplies(options),
  });
}

/** How many reply rows the handled updates make (an update whose attempt failed on an invalid reply queues none). */
export function expectedReplyRows(ctx: Pick<SoakContext, 'injected' | 'options'>): number {
  let n = 0;
  if (ctx.injected.count === 0) return 0;
  for (let u = ctx.injected.first; u <= ctx.injected.last; u++) n += replyMethodsOf(u, ctx.options).length;
  return n;
}

/** The update_ids the soak bot answers with an invalid reply (poison variant). */
export function expectedPoisoned(ctx: Pick<SoakContext, 'injected' | 'options'>): Set<number> {
  const out = new Set<number>();
  const every = poisonEveryOf(ctx.options);
  if (ctx.injected.count === 0 || every === 0) return out;
  for (let u = ctx.injected.first; u <= ctx.injected.last; u++) if (soakPoisons(u, every)) out.add(u);
  return out;
}

const pct = (a: number, b: number) => (b === 0 ? 'n/a' : `${((100 * a) / b).toFixed(a === b ? 0 : 2)}%`);

/** JSON with object keys sorted: jsonb (database) and JSON.parse (collector) order keys differently. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

export async function checkSoak(
  ctx: SoakContext,
  end: { drained: { ok: boolean; ms: number; last: DrainState | null }; stops: ExitRecord[] },
): Promise<SoakReport> {
  const { pool, botId, sandbox, collector, token, fleet, options } = ctx;
  const figures: Figure[] = [];
  const failures: string[] = [];
  const fig = (label: string, value: string | number, ok?: boolean, why?: string) => {
    figures.push({ label, value: String(value), ok });
    if (ok === false) failures.push(`${label}: ${value}${why ? ` — ${why}` : ''}`);
  };
  const section = (title: string) => figures.push({ label: `— ${title}`, value: '' });
  // fresh statistics first: autovacuum may not have analyzed tables that grew by 100k rows in
  // minutes, and a plan from stale estimates turned one check into a 3-minute nested loop
  await pool.query(
    'analyze relay.attempts, relay.inbox, relay.captures, relay.outbound, relay.quarantine, tg_relay_boss.job',
  );

  section('run');
  fig(
    'duration',
    `${((Date.now() - ctx.startedAt) / 1000).toFixed(0)} s (fleet up ${(ctx.phases['fleet up'] / 1000).toFixed(0)} s, fed ${((ctx.phases.fed ?? 0) / 1000).toFixed(0)} s, drained ${((ctx.phases.drained ?? 0) / 1000).toFixed(0)} s)`,
  );
  fig('processes', `${options.pollers} pollers, ${options.workers} workers, 1 admin`);
  fig(
    'SIGKILLs (then restarted)',
    `${fleet.kills.poller + fleet.kills.worker} (${fleet.kills.poller} pollers, ${fleet.kills.worker} workers)`,
  );
  fig('PostgreSQL restarts', `${ctx.pgRestartsDone} (${ctx.pgDescribe})`, ctx.pgRestartsDone >= options.pgRestarts);
  const sbStats = sandbox.stats();
  const faults = sbStats.faults.server_error + sbStats.faults.drop_before + sbStats.faults.drop_after;
  fig(
    'Bot API calls / faults injected',
    `${sbStats.calls} / ${faults} (${pct(faults, sbStats.calls)}: ${sbStats.faults.server_error} 5xx, ${sbStats.faults.drop_before} dropped before, ${sbStats.faults.drop_after} dropped after processing)`,
  );
  fig('Bot API 429s (limits enforced by the sandbox)', sbStats.rate_limited);
  const colStats = collector.stats();
  const colFailed = colStats.attempts - (colStats.by_outcome.accepted ?? 0) - (colStats.by_outcome.duplicate ?? 0);
  fig(
    'collector calls / failed',
    `${colStats.attempts} / ${colFailed} (${pct(colFailed, colStats.attempts)}: ${JSON.stringify(colStats.by_outcome)})`,
  );
  fig(
    'drained within bound',
    end.drained.ok
      ? `yes, ${(end.drained.ms / 1000).toFixed(1)} s after the chaos`
      : `NO after ${(end.drained.ms / 1000).toFixed(0)} s: ${JSON.stringify(end.drained.last)}`,
    end.drained.ok,
  );

  // ---- ingress -----------------------------------------------------------------------------------
  section('ingress');
  const { first, last } = ctx.injected;
  const bot = sandbox.botState(token);
  const createdBySandbox = bot.next_update_id - first;
  const inbox = (
    await pool.query(
      `select count(*)::int as n, count(distinct update_id)::int as d, min(update_id)::bigint as lo, max(update_id)::bigint as hi,
              (select count(*)::int from (select update_id - lag(update_id) over (order by update_id) as step from relay.inbox where bot_id = $1) s where step > 1) as gaps
         from relay.inbox where bot_id = $1`,
      [botId],
    )
  ).rows[0];
  const inboxOk =
    inbox.n === createdBySandbox && inbox.d === inbox.n && Number(inbox.lo) === first && Number(inbox.hi) === last;
  fig('updates received by the sandbox', createdBySandbox, createdBySandbox === ctx.injected.count);
  fig(
    'updates stored in the inbox',
    `${inbox.n} (distinct ${inbox.d}, update_id ${inbox.lo}..${inbox.hi})`,
    inboxOk,
    'must equal the sandbox, each once',
  );
  fig('inbox gaps', inbox.gaps, inbox.gaps === 0);
  fig(
    'confirmed to the sandbox (offset)',
    `${bot.confirmed_offset} (pending in the sandbox: ${bot.pending_count})`,
    bot.confirmed_offset === last + 1 && bot.pending_count === 0,
  );

  // ---- captures ----------------------------------------------------------------------------------
  section('captures');
  // the exact document POSTed (payload_raw); the jsonb copy has U+FFFD where jsonb cannot hold a code point
  const captures = (
    await pool.query(
      `select capture_key, update_id, state, coalesce(payload_raw, payload::json) as payload from relay.captures where bot_id = $1`,
      [botId],
    )
  ).rows as Array<{
    capture_key: string;
    update_id: string;
    state: string;
    payload: unknown;
  }>;
  const byKey = collector.byKey();
  const captureKeys = new Set(captures.map((c) => c.capture_key));
  let received = 0;
  let dupKeys = 0;
  let dupExtra = 0;
  let payloadMismatch = 0;
  let deliveredState = 0;
  for (const c of captures) {
    if (c.state === 'delivered') deliveredState++;
    const receipts = byKey.get(c.capture_key) ?? [];
    if (receipts.length > 0) received++;
    if (receipts.length > 1) {
      dupKeys++;
      dupExtra += receipts.length - 1;
    }
    const want = canonical(c.payload);
    for (const r of receipts) if (canonical(r.body) !== want) payloadMismatch++;
  }
  const foreign = [...byKey.keys()].filter((k) => !captureKeys.has(k)).length;
  const perUpdate = new Set(captures.map((c) => c.update_id)).size;
  fig(
    'captures stored (one per update)',
    `${captures.length} for ${perUpdate} updates`,
    captures.length === inbox.n && perUpdate === inbox.n,
  );
  fig(
    'captures delivered (state)',
    `${deliveredState} (${pct(deliveredState, captures.length)})`,
    deliveredState === captures.length,
  );
  fig(
    'captures received by the collector at least once',
    `${received} (${pct(received, captures.length)})`,
    received === captures.length,
  );
  fig('captures delivered more than once', `${dupKeys} keys, ${dupExtra} extra POSTs`);
  fig(
    'duplicates carry the same Idempotency-Key and payload',
    payloadMismatch === 0 ? 'yes' : `NO: ${payloadMismatch} receipts differ from the stored capture`,
    payloadMismatch === 0,
  );
  fig('collector keys that are no capture', foreign, foreign === 0);

  // ---- dispatch ----------------------------------------------------------------------------------
  section('update dispatch');
  const inboxStates = Object.fromEntries(
    (
      await pool.query(`select state, count(*)::int as n from relay.inbox where bot_id = $1 group by state`, [botId])
    ).rows.map((r) => [r.state, r.n]),
  ) as Record<string, number>;
  const runs = (await pool.query(`select id, chat_id, update_id, flaked from soak.handler_runs order by id`))
    .rows as Array<{
    id: string;
    chat_id: string;
    update_id: string;
    flaked: boolean;
  }>;
  const inboxIds = new Set<string>();
  for (let u = first; u <= last; u++) inboxIds.add(String(u));
  const okRuns = new Map<string, number>();
  let flaked = 0;
  let unknownRuns = 0;
  const maxSeen = new Map<string, number>();
  let orderViolations = 0;
  const orderExamples: string[] = [];
  for (const r of runs) {
    if (!inboxIds.has(r.update_id)) unknownRuns++;
    if (r.flaked) flaked++;
    else okRuns.set(r.update_id, (okRuns.get(r.update_id) ?? 0) + 1);
    const u = Number(r.update_id);
    const seen = maxSeen.get(r.chat_id) ?? -Infinity;
    if (u < seen) {
      orderViolations++;
      if (orderExamples.length < 5) orderExamples.push(`chat ${r.chat_id}: update ${u} ran after ${seen}`);
    } else maxSeen.set(r.chat_id, u);
  }
  let neverRun = 0;
  let rerun = 0;
  for (const id of inboxIds) {
    const n = okRuns.get(id) ?? 0;
    if (n === 0) neverRun++;
    if (n > 1) rerun++;
  }
  const handled = inboxStates.handled ?? 0;
  const poisoned = expectedPoisoned(ctx);
  const toHandle = inbox.n - poisoned.size;
  fig(
    poisoned.size ? 'updates handled (all but the poison-reply ones)' : 'updates handled',
    `${handled} of ${toHandle} (${pct(handled, toHandle)}; states ${JSON.stringify(inboxStates)})`,
    handled === toHandle && (inboxStates.failed ?? 0) === poisoned.size && inbox.n > 0,
  );
  fig('handler runs recorded', `${runs.length} (${flaked} scripted flaky failures, retried)`);
  fig(
    'updates with a successful handler run recorded',
    `${inbox.n - neverRun} (${pct(inbox.n - neverRun, inbox.n)})`,
    neverRun === 0,
  );
  fig('updates whose handler succeeded more than once (at-least-once after a crash)', rerun);
  fig('handler runs of unknown updates', unknownRuns, unknownRuns === 0);
  fig(
    'per-chat dispatch order violations',
    orderViolations + (orderExamples.length ? ` (${orderExamples.join('; ')})` : ''),
    orderViolations === 0,
  );

  // ---- outbound ----------------------------------------------------------------------------------
  section('outbound');
  const rows = (
    await pool.query(
      `select id::text, msg_id, kind, state, chat_id, target_chat_id, text, failed_reason, telegram_message_id,
              method, params, telegram_message_ids::text[] as telegram_message_ids
         from relay.outbound where bot_id = $1 order by id`,
      [botId],
    )
  ).rows as OutboundRow[];
  const ofKind = (k: string) => rows.filter((r) => r.kind === k);
  const messages = ofKind('message');
  const replies = ofKind('reply');
  const alerts = ofKind('alert');
  const expectedReplies = expectedReplyRows(ctx);
  // each reply row is call n of a handled update's attempt, with the method the bot called n-th
  const replyIdsOk = replies.every((r) => {
    const m = /^update:(\d+):(\d+):(\d+)$/.exec(r.msg_id);
    if (!m || m[1] !== botId || Number(m[2]) < first || Number(m[2]) > last) return false;
    return replyMethodsOf(Number(m[2]), options)[Number(m[3]) - 1] === r.method;
  });
  fig(
    'outbound messages enqueued (SQL function + admin API)',
    `${messages.length} of ${options.outbound}`,
    messages.length === options.outbound,
  );
  const replyMethods = new Map<string, number>();
  for (const r of replies) replyMethods.set(r.method, (replyMethods.get(r.method) ?? 0) + 1);
  fig(
    'handler replies enqueued (exactly once per call of a handled update)',
    `${replies.length} of ${expectedReplies} (${[...replyMethods].map(([m, n]) => `${m} ${n}`).join(', ')})`,
    replies.length === expectedReplies && new Set(replies.map((r) => r.msg_id)).size === replies.length && replyIdsOk,
  );
  const notAlerts = [...messages, ...replies];
  const delivered = notAlerts.filter((r) => r.state === 'delivered');
  const failed = notAlerts.filter((r) => r.state === 'failed');
  const unexpectedFailed = failed.filter((r) => !ctx.expectedFailures.has(r.msg_id));
  const missingFailed = [...ctx.expectedFailures].filter((id) => !failed.some((r) => r.msg_id === id));
  fig(
    'outbound delivered',
    `${delivered.length} of ${notAlerts.length - ctx.expectedFailures.size} deliverable (${pct(delivered.length, notAlerts.length - ctx.expectedFailures.size)})`,
    delivered.length === notAlerts.length - ctx.expectedFailures.size,
  );
  fig(
    'outbound failed (only the scripted terminal ones)',
    `${failed.length} (${[...new Set(failed.map((r) => r.failed_reason))].join('; ')})`,
    unexpectedFailed.length === 0 && missingFailed.length === 0,
    `unexpected: ${unexpectedFailed.map((r) => `${r.msg_id} (${r.failed_reason})`).join(', ')}; expected but not failed: ${missingFailed.join(', ')}`,
  );
  // alerts are coalesced (ALERT_COALESCE): a failure is told by its own alert (alert:<msg_id>), by
  // the count of a window's summary (alert:window:…), or is still held back in its open window
  const own = alerts.filter((a) => !a.msg_id.startsWith('alert:window:'));
  const summaries = alerts.filter((a) => a.msg_id.startsWith('alert:window:'));
  const summarized = summaries.reduce(
    (n, a) => n + Number(/^tg-relay: (\d+) more outbound messages? failed/.exec(a.text ?? '')?.[1] ?? NaN),
    0,
  );
  const held = (
    await pool.query<{ n: number }>(
      `select coalesce(sum(failures), 0)::int as n from relay.alert_windows where bot_id = $1`,
      [botId],
    )
  ).rows[0].n;
  // a user who blocked the bot (deleted the account, removed it) is recorded in relay.chat_status, never alerted
  const unreachable = new Set(
    (
      await pool.query<{ chat_id: string }>(
        `select chat_id from relay.chat_status where bot_id = $1 and status in ('blocked', 'deactivated', 'kicked')`,
        [botId],
      )
    ).rows.map((r) => r.chat_id),
  );
  const alertable = failed.filter((r) => !unreachable.has(r.target_chat_id ?? r.chat_id ?? ''));
  const failedIds = new Set(alertable.map((r) => r.msg_id));
  const ownOk = own.every((a) => failedIds.has(a.msg_id.replace(/^alert:/, '')));
  const ownOnce = new Set(own.map((a) => a.msg_id)).size === own.length;
  const allDelivered = alerts.every((a) => a.state === 'delivered');
  fig(
    'alerts: every failed message told once (its own alert, a window summary, or held in the open window), delivered',
    `${own.length} own + ${summarized} in ${summaries.length} summaries + ${held} held = ${own.length + summarized + held} of ${alertable.length} (${failed.length - alertable.length} to chats in relay.chat_status: none)`,
    ownOk && ownOnce && allDelivered && own.length + summarized + held === alertable.length,
  );
  const migrated = messages.filter((r) => Number(r.chat_id) === MIGRATED_GROUP);
  fig(
    'migrated group: retargeted and delivered',
    `${migrated.filter((r) => r.state === 'delivered' && Number(r.target_chat_id) === MIGRATED_TO).length} of ${migrated.length}`,
    migrated.every((r) => r.state === 'delivered' && Number(r.target_chat_id) === MIGRATED_TO),
  );

  // Every send and edit the sandbox accepted, mapped back to its row by its text or caption (unique by
  // construction, soak-media.ts); an album counts once, by its first message, and is ordered by all.
  const rowOfKey = new Map<string, OutboundRow>();
  let textClashes = 0;
  for (const r of rows) {
    const k = rowSendKey(r);
    if (rowOfKey.has(k)) textClashes++;
    rowOfKey.set(k, r);
  }
  const sent = sandbox.sent(token);
  const sentCount = new Map<string, number>();
  let unknownSent = 0;
  let wrongChat = 0;
  const lastIdOfChat = new Map<number, number>();
  let sendOrderViolations = 0;
  const sendOrderExamples: string[] = [];
  for (const s of [...sent].sort((a, b) => a.seq - b.seq)) {
    const row = rowOfKey.get(sentKey(s));
    if (!row) {
      unknownSent++;
      continue;
    }
    if (!isAlbumTail(s)) sentCount.set(row.id, (sentCount.get(row.id) ?? 0) + 1);
    if (Number(row.target_chat_id) !== s.resolved_chat_id) wrongChat++;
    const id = Number(row.id);
    const prev = lastIdOfChat.get(s.resolved_chat_id) ?? -Infinity;
    if (id < prev) {
      sendOrderViolations++;
      if (sendOrderExamples.length < 5) sendOrderExamples.push(`chat ${s.resolved_chat_id}: id ${id} after ${prev}`);
    } else lastIdOfChat.set(s.resolved_chat_id, id);
  }
  const deliveredNeverSent = rows.filter((r) => r.state === 'delivered' && !sentCount.get(r.id)).length;
  const failedButSent = rows.filter((r) => r.state === 'failed' && sentCount.get(r.id)).length;
  const sentMethods = new Map<string, number>();
  for (const x of sent) sentMethods.set(x.method, (sentMethods.get(x.method) ?? 0) + 1);
  fig(
    'sends the sandbox accepted',
    `${sent.length} (to ${lastIdOfChat.size} chats; ${[...sentMethods].map(([m, n]) => `${m} ${n}`).join(', ')})`,
  );
  fig(
    'sends of no outbound row / to the wrong chat',
    `${unknownSent} / ${wrongChat}`,
    unknownSent === 0 && wrongChat === 0 && textClashes === 0,
  );
  fig(
    'delivered rows Telegram never got / failed rows it got',
    `${deliveredNeverSent} / ${failedButSent}`,
    deliveredNeverSent === 0 && failedButSent === 0,
  );
  fig(
    'per-chat send order violations (text, media and edits alike)',
    sendOrderViolations + (sendOrderExamples.length ? ` (${sendOrderExamples.join('; ')})` : ''),
    sendOrderViolations === 0,
  );

  // A second copy of a message is allowed only after an attempt recorded as `ambiguous`: a connection
  // dropped after the request was written, or a worker that died mid-attempt (stale recovery).
  const uncertain = (
    await pool.query(
      `select a.subject_id::text as id, count(*)::int as ambiguous,
              count(*) filter (where a.error_code = 'RELAY_STALE_CLAIM')::int as stale
         from relay.attempts a join relay.outbound o on o.id = a.subject_id and a.subject = 'outbound'
        where o.bot_id = $1 and a.outcome = 'ambiguous'
        group by a.subject_id`,
      [botId],
    )
  ).rows as Array<{ id: string; ambiguous: number; stale: number }>;
  const uncertainOf = new Map(uncertain.map((u) => [u.id, u]));
  let dupRows = 0;
  let dupExtraSends = 0;
  let dupAfterDrop = 0;
  let dupAfterDeath = 0;
  let dupUnexplained = 0;
  const unexplainedExamples: string[] = [];
  const methodOf = new Map(rows.map((r) => [r.id, r.method]));
  const dupByMethod = new Map<string, number>();
  for (const [id, n] of sentCount) {
    if (n <= 1) continue;
    dupRows++;
    dupExtraSends += n - 1;
    dupByMethod.set(methodOf.get(id) ?? '?', (dupByMethod.get(methodOf.get(id) ?? '?') ?? 0) + 1);
    const u = uncertainOf.get(id);
    if (!u || u.ambiguous < n - 1) {
      dupUnexplained++;
      if (unexplainedExamples.length < 5)
        unexplainedExamples.push(`outbound ${id}: sent ${n}×, ${u?.ambiguous ?? 0} ambiguous attempts recorded`);
    } else if (u.stale > 0) dupAfterDeath++;
    else dupAfterDrop++;
  }
  const ambiguousAttempts = uncertain.reduce((a, u) => a + u.ambiguous, 0);
  const staleAmbiguous = uncertain.reduce((a, u) => a + u.stale, 0);
  fig(
    'ambiguous send attempts recorded',
    `${ambiguousAttempts} (${ambiguousAttempts - staleAmbiguous} connection dropped after the request was written, ${staleAmbiguous} worker died mid-attempt)`,
  );
  fig(
    'duplicate sends',
    `${dupRows} messages sent more than once, ${dupExtraSends} extra sends (${dupAfterDrop} after a dropped connection, ${dupAfterDeath} after a SIGKILLed worker; ${[...dupByMethod].map(([m, n]) => `${m} ${n}`).join(', ') || 'none'})`,
  );
  fig(
    'duplicate sends not preceded by as many recorded ambiguous attempts',
    dupUnexplained + (unexplainedExamples.length ? ` (${unexplainedExamples.join('; ')})` : ''),
    dupUnexplained === 0,
  );

  if (mediaReplies(options)) {
    const numbered = replies.map((row) => {
      const m = /^update:\d+:(\d+):(\d+)$/.exec(row.msg_id);
      return { row, update: Number(m?.[1]), n: Number(m?.[2]) };
    });
    checkMedia({ replies: numbered, sent, calls: sandbox.calls(token) }, fig, section);
  }

  if (options.poison) await checkPoison(ctx, poisoned, fig, section);

  // ---- rows and their pg-boss jobs ---------------------------------------------------------------
  section('consistency');
  const mirror = (
    await pool.query(
      `with r as (
         select 'inbox' as t, i.state, j.state::text as js from relay.inbox i left join tg_relay_boss.job j on j.name = 'update.dispatch' and j.id = i.job_id where i.bot_id = $1
         union all select 'captures', c.state, j.state::text from relay.captures c left join tg_relay_boss.job j on j.name = 'capture.deliver' and j.id = c.job_id where c.bot_id = $1
         union all select 'outbound', o.state, j.state::text from relay.outbound o left join tg_relay_boss.job j on j.name = 'outbound.send' and j.id = o.job_id where o.bot_id = $1)
       select t, state, js, count(*)::int as n from r
        where not ((state in ('handled', 'delivered') and js = 'completed') or (state = 'failed' and js = 'failed'))
        group by t, state, js`,
      [botId],
    )
  ).rows as Array<{ t: string; state: string; js: string | null; n: number }>;
  fig(
    'rows out of step with their pg-boss job',
    mirror.length === 0 ? 0 : mirror.map((m) => `${m.t} ${m.state}/${m.js ?? 'no job'}: ${m.n}`).join(', '),
    mirror.length === 0,
  );

  // Each item's success is recorded once: a late result of a recovered claim is fenced (RELAY_CLAIM_LOST).
  const twice = (
    await pool.query(
      `select subject, count(*)::int as n from (
         select a.subject, a.subject_id from relay.attempts a
          where a.subject in ('inbox', 'capture', 'outbound') and a.outcome in ('handled', 'delivered') and a.error_code is null
            and a.subject_id in (select id from relay.inbox where bot_id = $1 union all select id from relay.captures where bot_id = $1
                                 union all select id from relay.outbound where bot_id = $1)
          group by a.subject, a.subject_id having count(*) > 1) x
        group by subject`,
      [botId],
    )
  ).rows as Array<{ subject: string; n: number }>;
  fig(
    'items whose success was recorded more than once',
    twice.length === 0 ? 0 : twice.map((t) => `${t.subject}: ${t.n}`).join(', '),
    twice.length === 0,
  );
  const deadlocks =
    (await pool.query('select deadlocks::int as n from pg_stat_database where datname = current_database()')).rows[0]
      ?.n ?? 0;
  fig('deadlocks PostgreSQL detected (and aborted one side; retried)', deadlocks);

  // ---- processes ---------------------------------------------------------------------------------
  section('processes');
  const crashes = fleet.crashes();
  fig(
    'processes crashed unexpectedly',
    crashes.length === 0
      ? 0
      : `${crashes.length}: ${crashes.map((c) => `${c.name} life ${c.life} (code ${c.code}, signal ${c.signal})`).join(', ')}`,
    crashes.length === 0,
  );
  for (const c of crashes)
    failures.push(
      `${c.name} (pid ${c.pid}) exited on its own with code ${c.code}, signal ${c.signal}; last output:\n${c.tail.slice(-1500)}`,
    );
  const badStops = end.stops.filter((s) => s.code !== 0);
  fig(
    'final SIGTERM: processes exiting 0',
    `${end.stops.length - badStops.length} of ${end.stops.length}`,
    badStops.length === 0 && end.stops.length === options.pollers + options.workers + 1,
  );
  for (const s of badStops) {
    // a process SIGKILLed for ignoring the stop left what it was doing in <name>.stuck (Fleet.stopAll)
    const stuck =
      s.signal === 'SIGKILL' ? ` (its threads' state at the SIGKILL: ${s.name}.stuck in the kept logs)` : '';
    failures.push(`${s.name} exited ${s.code}/${s.signal} after SIGTERM${stuck}; last output:\n${s.tail.slice(-1500)}`);
  }

  return { seed: options.seed, durationMs: Date.now() - ctx.startedAt, figures, failures };
}

/** The figures as an aligned text table, then the verdict. */
export function formatReport(r: SoakReport): string {
  const width = Math.max(...r.figures.map((f) => f.label.length));
  const lines = r.figures.map((f) => {
    if (f.label.startsWith('— ')) return `\n${f.label}`;
    const mark = f.ok === undefined ? '    ' : f.ok ? ' ok ' : 'FAIL';
    return `${mark}  ${f.label.padEnd(width)}  ${f.value}`;
  });
  lines.push('');
  lines.push(
    r.failures.length === 0
      ? `soak PASSED (seed ${r.seed})`
      : `soak FAILED (seed ${r.seed}): ${r.failures.length} invariant(s)\n${r.failures.map((f) => `  - ${f}`).join('\n')}`,
  );
  return lines.join('\n');
}

type Fig = (label: string, value: string | number, ok?: boolean, why?: string) => void;

/**
 * The poison variant's own invariants: every hostile text stored exactly (raw round-trip),
 * handled with the exact text and captured with the exact text; every poison reply's update failed at
 * once with RELAY_INVALID_REPLY, and nothing else failed (no other update, chat or worker held up).
 * A failed update raises no alert (alerts are about failed outbound messages, docs/outbound.md): the
 * outbound section already requires every failed message told once (own alert or a window summary) and no other alert.
 */
async function checkPoison(
  ctx: SoakContext,
  poisoned: Set<number>,
  fig: Fig,
  section: (title: string) => void,
): Promise<void> {
  const { pool, botId, collector, hostile } = ctx;
  section('poison: hostile text and invalid replies');
  const ids = [...hostile.keys()];
  fig(
    'hostile-text updates sent',
    `${ids.length} from ${ctx.hostileChats.size} of ${ctx.userChats.length} users`,
    ids.length > 0,
  );

  const stored = (
    await pool.query(
      `select update_id::text, state, coalesce(raw, payload::json)::text as raw from relay.inbox where bot_id = $1 and update_id = any($2::bigint[])`,
      [botId, ids],
    )
  ).rows as Array<{ update_id: string; state: string; raw: string }>;
  let exact = 0;
  const inexact: string[] = [];
  for (const r of stored) {
    const text = (JSON.parse(r.raw) as { message?: { text?: string } }).message?.text;
    if (text === hostile.get(Number(r.update_id))) exact++;
    else if (inexact.length < 5) inexact.push(r.update_id);
  }
  fig(
    'hostile texts stored exactly (raw round-trip)',
    `${exact} of ${ids.length}${inexact.length ? ` (differ: ${inexact.join(', ')})` : ''}`,
    exact === ids.length && stored.length === ids.length,
  );

  const runs = (
    await pool.query(
      `select update_id::text, text_utf16 from soak.handler_runs where not flaked and update_id = any($1::bigint[])`,
      [ids],
    )
  ).rows as Array<{ update_id: string; text_utf16: Buffer | null }>;
  const sawExact = new Set<number>();
  let sawOther = 0;
  for (const r of runs) {
    const u = Number(r.update_id);
    if (r.text_utf16 && fromUtf16(r.text_utf16) === hostile.get(u)) sawExact.add(u);
    else sawOther++;
  }
  const stateOf = new Map(stored.map((r) => [Number(r.update_id), r.state]));
  const hostileToHandle = ids.filter((u) => !poisoned.has(u));
  const handledExact = hostileToHandle.filter((u) => stateOf.get(u) === 'handled' && sawExact.has(u)).length;
  fig(
    'hostile-text updates handled, the handler saw the exact text',
    `${handledExact} of ${hostileToHandle.length}${sawOther ? ` (${sawOther} runs saw other text)` : ''}`,
    handledExact === hostileToHandle.length && sawOther === 0,
  );

  const keyOf = new Map(
    (
      (
        await pool.query(
          `select update_id::text, capture_key from relay.captures where bot_id = $1 and update_id = any($2::bigint[])`,
          [botId, ids],
        )
      ).rows as Array<{ update_id: string; capture_key: string }>
    ).map((r) => [Number(r.update_id), r.capture_key]),
  );
  const byKey = collector.byKey();
  let capturedExact = 0;
  for (const u of ids) {
    const receipts = byKey.get(keyOf.get(u) ?? '') ?? [];
    if (receipts.length > 0 && receipts.every((r) => (r.body as { text?: unknown }).text === hostile.get(u)))
      capturedExact++;
  }
  fig(
    'hostile-text updates captured, the collector got the exact text',
    `${capturedExact} of ${ids.length}`,
    capturedExact === ids.length,
  );

  const outcome = (
    await pool.query(
      `select i.update_id::text, i.state, i.chat_id::text, left(i.last_error, 40) as last_error,
              (select count(*)::int from relay.attempts a where a.subject = 'inbox' and a.subject_id = i.id and a.outcome = 'failed' and a.error_code = 'RELAY_INVALID_REPLY') as failed_invalid,
              (select count(*)::int from relay.attempts a where a.subject = 'inbox' and a.subject_id = i.id and a.outcome <> 'failed' and a.error_code = 'RELAY_INVALID_REPLY') as retried_invalid
         from relay.inbox i where i.bot_id = $1 and (i.state = 'failed' or i.update_id = any($2::bigint[]))`,
      [botId, [...poisoned]],
    )
  ).rows as Array<{
    update_id: string;
    state: string;
    chat_id: string;
    last_error: string | null;
    failed_invalid: number;
    retried_invalid: number;
  }>;
  const poisonRows = outcome.filter((r) => poisoned.has(Number(r.update_id)));
  const failedAtOnce = poisonRows.filter(
    (r) =>
      r.state === 'failed' &&
      r.last_error?.startsWith('RELAY_INVALID_REPLY') &&
      r.failed_invalid === 1 &&
      r.retried_invalid === 0,
  );
  const kinds = new Map<number, number>();
  for (const u of poisoned) kinds.set(u % 4, (kinds.get(u % 4) ?? 0) + 1);
  fig(
    'poison-reply updates failed at once with RELAY_INVALID_REPLY',
    `${failedAtOnce.length} of ${poisoned.size} (5,000 chars ${kinds.get(0) ?? 0}, whitespace only ${kinds.get(1) ?? 0}, lone surrogate ${kinds.get(2) ?? 0}, NUL ${kinds.get(3) ?? 0}; ${[...new Set(poisonRows.map((r) => r.chat_id))].length} chats)`,
    failedAtOnce.length === poisoned.size && poisoned.size > 0,
  );
  const otherFailed = outcome.filter((r) => r.state === 'failed' && !poisoned.has(Number(r.update_id)));
  fig(
    'other updates failed (must be none: no other update or chat held up)',
    otherFailed.length +
      (otherFailed.length
        ? ` (${otherFailed
            .slice(0, 5)
            .map((r) => `${r.update_id}: ${r.last_error}`)
            .join('; ')})`
        : ''),
    otherFailed.length === 0,
  );
  const chatsWithPoison = new Set(poisonRows.map((r) => r.chat_id));
  const after = (
    await pool.query(
      `select count(*)::int as n, count(*) filter (where i.state = 'handled')::int as handled from relay.inbox i
        where i.bot_id = $1 and i.chat_id = any($2::bigint[]) and not (i.update_id = any($3::bigint[]))
          and i.update_id > (select min(p.update_id) from relay.inbox p where p.bot_id = $1 and p.chat_id = i.chat_id and p.update_id = any($3::bigint[]))`,
      [botId, [...chatsWithPoison], [...poisoned]],
    )
  ).rows[0] as { n: number; handled: number };
  fig(
    'later updates of the chats with a failed update, handled',
    `${after.handled} of ${after.n}`,
    after.handled === after.n,
  );
  fig(
    'alerts about failed updates',
    '0 (none promised: alerts are about failed outbound messages; checked in the outbound section)',
  );
}
