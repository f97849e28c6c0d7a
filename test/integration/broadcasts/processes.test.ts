/**
 * Broadcasts on real processes: 3 `tg-relay worker` processes and a `tg-relay admin` process
 * against the sandbox Bot API, which enforces 30 msg/s per bot (429 above it). Every broadcast is
 * created with POST /v1/broadcasts and followed with GET /v1/broadcasts/{id}; what reached Telegram
 * is read from the sandbox, final states from relay.outbound. In order (they share the fleet):
 * a 3,000-chat broadcast while 20 users get replies; SIGKILL of every worker mid-broadcast (and a
 * pause while they are down);
 * pause/resume and cancel, with sends in flight that end retryable; chats that blocked the bot.
 */
import { withTransaction } from '../../../libs/db';
import { enqueueOutbound } from '../../../libs/outbound';
import { sleep } from '../../../libs/lifecycle/timers';
import { killAdmin, startAdminProcess, type AdminProcess } from '../../support/admin-process';
import { useOutboundFleet } from '../../support/outbound-fleet';
import { waitFor } from '../../support/wait-for';
import { killWorker, startWorkerProcess, workerStarted } from '../../support/worker-process';

const TOKEN = '5353:bcast-processes-token-not-a-secret';
const BOT = '5353';
const OPS = '-100535353';
const PER_BOT = 30;

const fleet = useOutboundFleet('bc_processes', { seed: 7, limits: { perBot: { count: PER_BOT, windowMs: 1000 } } });
let admin: AdminProcess;

const env = () => ({
  DATABASE_URL: fleet.db.url,
  TELEGRAM_BOT_TOKEN: TOKEN,
  TELEGRAM_API_ROOT: fleet.sb.url,
  OPS_CHAT_ID: OPS,
  OUTBOUND_RATE_PER_BOT: `${PER_BOT}/1s`,
});

async function startWorkers(n: number): Promise<void> {
  const started = Array.from({ length: n }, () => {
    const w = startWorkerProcess({
      ...env(),
      RETRY_BASE: '50ms',
      RETRY_CAP: '500ms',
      RETRY_MAX_ATTEMPTS: '100',
      LOG_LEVEL: 'info',
    });
    fleet.workers.push(w);
    return w;
  });
  await Promise.all(started.map((w) => workerStarted(w)));
}

beforeAll(async () => {
  [admin] = await Promise.all([startAdminProcess(env()), startWorkers(3)]);
}, 60_000);
afterAll(async () => {
  await killAdmin(admin);
});

const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);

interface Counts {
  pending: number;
  paused: number;
  delivering: number;
  delivered: number;
  failed: number;
  cancelled: number;
  blocked: number;
  skipped: number;
}
interface Status {
  id: string;
  state: string;
  recipients: number;
  counts: Counts;
}

async function create(body: Record<string, unknown>): Promise<{ id: string; recipients: number; skipped: number }> {
  const r = await admin.api<{ id: string; recipients: number; skipped: number }>('POST', '/v1/broadcasts', body);
  expect(r.status).toBe(201);
  return r.body;
}

async function status(id: string): Promise<Status> {
  const r = await admin.api<Status>('GET', `/v1/broadcasts/${id}`);
  expect(r.status).toBe(200);
  return r.body;
}

async function control(id: string, action: 'pause' | 'resume' | 'cancel'): Promise<Status> {
  const r = await admin.api<Status>('POST', `/v1/broadcasts/${id}/${action}`);
  expect(r.status).toBe(200);
  return r.body;
}

function until(id: string, ok: (s: Status) => boolean, what: string, timeoutMs = 60_000): Promise<Status> {
  return waitFor(
    async () => {
      const s = await status(id);
      return ok(s) ? s : undefined;
    },
    { timeoutMs, intervalMs: 250, what },
  );
}

/** The broadcast's counts as relay.outbound says, worked out here from its rows' states and reasons. */
async function sqlCounts(id: string): Promise<Omit<Counts, 'skipped'>> {
  const { rows } = await fleet.db.pool.query<{
    state: 'pending' | 'paused' | 'delivering' | 'delivered' | 'failed';
    failed_reason: string | null;
    last_status: number | null;
    n: number;
  }>(
    `select state, failed_reason, last_status, count(*)::int as n from relay.outbound
      where broadcast_id = $1::bigint group by 1, 2, 3`,
    [id],
  );
  const c = { pending: 0, paused: 0, delivering: 0, delivered: 0, failed: 0, cancelled: 0, blocked: 0 };
  for (const r of rows) {
    if (r.state !== 'failed') c[r.state] += r.n;
    else if (r.failed_reason === 'cancelled') c.cancelled += r.n;
    else if (r.last_status === 403 && /blocked by the user|user is deactivated/.test(r.failed_reason ?? ''))
      c.blocked += r.n;
    else c.failed += r.n;
  }
  return c;
}

async function expectCountsMatchSql(s: Status): Promise<void> {
  const { skipped: _s, ...counts } = s.counts;
  expect(counts).toEqual(await sqlCounts(s.id));
}

/** How many times each chat received `text` at the sandbox. */
function receipts(text: string): Map<number, number> {
  const out = new Map<number, number>();
  for (const m of fleet.sb.sent(TOKEN))
    if (m.text === text) out.set(m.resolved_chat_id, (out.get(m.resolved_chat_id) ?? 0) + 1);
  return out;
}

/** Ambiguous attempts recorded per chat of a broadcast (msg_id bcast:{id}:{chat}). */
async function ambiguousByChat(id: string): Promise<Map<number, number>> {
  const { rows } = await fleet.db.pool.query<{ chat: string; n: number }>(
    `select split_part(subject_key, ':', 3) as chat, count(*)::int as n from relay.attempts
      where subject = 'outbound' and outcome = 'ambiguous' and subject_key like $1 group by 1`,
    [`bcast:${id}:%`],
  );
  return new Map(rows.map((r) => [Number(r.chat), r.n]));
}

async function alertCount(): Promise<number> {
  const { rows } = await fleet.db.pool.query(`select count(*)::int as n from relay.outbound where kind = 'alert'`);
  return rows[0].n;
}

it('a 3,000-chat broadcast while 20 users get replies: every reply within 2 s, the broadcast completes once per chat, counts match SQL', async () => {
  const { db, sb } = fleet;
  const CHATS = 3_000;
  const REPLIES = 20;
  const ratedBefore = sb.stats().rate_limited;
  const { id } = await create({ chat_ids: range(10_000, CHATS).map(String), text: 'broadcast one' });
  await until(id, (s) => s.counts.delivered >= 60, 'the broadcast under way');

  // half to chats whose broadcast message is still pending (a reply may overtake it), half to others
  const enqueuedAt = new Map<string, number>();
  for (let i = 0; i < REPLIES; i++) {
    const chat = i % 2 === 0 ? 10_000 + CHATS - 1 - i : 90_000 + i;
    await withTransaction(db.pool, (c) =>
      enqueueOutbound(c, { msg_id: `reply-${i}`, chat_id: chat, text: `reply ${i}`, kind: 'reply' }, { botId: BOT }),
    );
    enqueuedAt.set(`reply ${i}`, Date.now()); // committed: the reply is enqueued from here on
    await sleep(500);
  }
  const received = await waitFor(
    () => {
      const at = new Map(sb.sent(TOKEN).flatMap((m) => (enqueuedAt.has(m.text) ? [[m.text, m.time] as const] : [])));
      return at.size === REPLIES ? at : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 100, what: 'every reply at the sandbox' },
  );
  const during = await status(id);
  const ms = [...enqueuedAt].map(([text, t]) => received.get(text)! - t).sort((a, b) => a - b);
  console.log(
    `reply latency during a 3,000-chat broadcast (enqueue → sandbox): p50 ${ms[Math.floor(ms.length / 2)]} ms, max ${
      ms[ms.length - 1]
    } ms (bound 2,000 ms); broadcast messages still unsent then: ${CHATS - during.counts.delivered}`,
  );
  // the replies did not wait for the broadcast to drain
  expect(CHATS - during.counts.delivered).toBeGreaterThan(1_000);
  for (const v of ms) expect(v).toBeLessThan(2_000);

  const done = await until(id, (s) => s.state === 'completed', 'the broadcast completes', 240_000);
  expect(done.counts).toMatchObject({ delivered: CHATS, pending: 0, delivering: 0, failed: 0 });
  await expectCountsMatchSql(done);
  const times = receipts('broadcast one');
  expect(times.size).toBe(CHATS);
  expect([...times].filter(([, n]) => n > 1)).toEqual([]);
  for (const text of enqueuedAt.keys()) expect(sb.sent(TOKEN).filter((m) => m.text === text)).toHaveLength(1);
  const rated = sb.stats().rate_limited - ratedBefore;
  console.log(`429s: ${rated} for ${CHATS + REPLIES} messages`);
  expect(rated).toBeLessThan((CHATS + REPLIES) / 100);
}, 300_000);

it('SIGKILL of every worker mid-broadcast, paused while they are down, new workers: the dead claims wait paused; resumed, it completes, one send per chat (a second only after a recorded ambiguous attempt)', async () => {
  const CHATS = 400;
  const text = 'broadcast two';
  const chats = range(20_000, CHATS);
  const { id } = await create({ chat_ids: chats.map(String), text });
  await until(id, (s) => s.counts.delivered >= 200, 'some hundreds delivered');
  await Promise.all(fleet.workers.map((w) => killWorker(w)));
  const atKill = receipts(text).size;
  expect(atKill).toBeLessThan(CHATS);
  // the dead workers' claims are still `delivering`: pause leaves them to stale recovery
  expect((await control(id, 'pause')).state).toBe('paused');
  await startWorkers(3);

  const recovered = await waitFor(
    async () => {
      const { rows } = await fleet.db.pool.query<{ chat: string }>(
        `select distinct split_part(subject_key, ':', 3) as chat from relay.attempts
          where subject = 'outbound' and error_code = 'RELAY_STALE_CLAIM' and subject_key like $1`,
        [`bcast:${id}:%`],
      );
      return rows.length ? new Set(rows.map((r) => Number(r.chat))) : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 250, what: "the dead workers' claims recovered" },
  );
  await until(id, (s) => s.counts.delivering === 0, 'nothing in flight', 15_000);
  const paused = receipts(text).size;
  await sleep(1_500);
  expect(receipts(text).size).toBe(paused);
  expect(new Set(await statesOf(id, recovered))).toEqual(new Set(['paused']));
  expect((await status(id)).counts).toMatchObject({ pending: 0, delivering: 0 });

  expect((await control(id, 'resume')).state).toBe('running');
  const done = await until(id, (s) => s.state === 'completed', 'the broadcast completes after the restart', 90_000);
  expect(done.counts).toMatchObject({ delivered: CHATS, pending: 0, delivering: 0, failed: 0 });
  await expectCountsMatchSql(done);
  const times = receipts(text);
  expect(chats.filter((c) => !times.has(c))).toEqual([]);
  const ambiguous = await ambiguousByChat(id);
  const unexplained = [...times].filter(([chat, n]) => n > 1 + (ambiguous.get(chat) ?? 0));
  expect(unexplained).toEqual([]);
  console.log(
    `SIGKILL at ${atKill}/${CHATS} received, ${recovered.size} claims recovered; ${
      [...times.values()].filter((n) => n > 1).length
    } chats got a second copy, ${ambiguous.size} ambiguous`,
  );
}, 150_000);

/**
 * Makes the next sends hang in the sandbox and answer 502 (retryable) after 2.5 s, runs `act`
 * while they are on the wire, then lets later sends through. Returns when `act` returned and the
 * chats whose 502 came after it.
 */
async function whileSendsHang(act: () => Promise<unknown>): Promise<{ actedAt: number; chats: Set<number> }> {
  const { sb } = fleet;
  const HANG_MS = 2_500;
  sb.setFaults({ latencyMs: HANG_MS, serverErrorRate: 1, serverErrorStatus: 502, methods: ['sendMessage'] }, TOKEN);
  const hungFrom = Date.now();
  await sleep(400);
  await act();
  const actedAt = Date.now();
  sb.setFaults(null, TOKEN);
  await sleep(Math.max(0, hungFrom + HANG_MS + 300 - Date.now()));
  const chats = new Set(
    sb
      .calls(TOKEN, { method: 'sendMessage' })
      .filter((c) => c.status === 502 && c.time + c.duration_ms > actedAt)
      .map((c) => Number(c.params.chat_id)),
  );
  return { actedAt, chats };
}

async function statesOf(id: string, chats: Set<number>): Promise<string[]> {
  const { rows } = await fleet.db.pool.query<{ s: string }>(
    `select state || coalesce(':' || failed_reason, '') as s from relay.outbound
      where broadcast_id = $1::bigint and target_chat_id = any($2::text[]) order by id`,
    [id, [...chats].map(String)],
  );
  return rows.map((r) => r.s);
}

it('pause stops the sends (a send in flight that ends retryable stays paused), resume completes it once per chat', async () => {
  const CHATS = 240;
  const text = 'broadcast three';
  const { id } = await create({ chat_ids: range(30_000, CHATS).map(String), text });
  await until(id, (s) => s.counts.delivered >= 60, 'the broadcast under way');
  const hung = await whileSendsHang(async () => expect((await control(id, 'pause')).state).toBe('paused'));
  expect(hung.chats.size).toBeGreaterThan(0); // else nothing here tests the in-flight case

  const settled = await until(id, (s) => s.counts.delivering === 0, 'in-flight sends settled', 15_000);
  const before = receipts(text).size;
  await sleep(2_000);
  const after = await status(id);
  expect(receipts(text).size).toBe(before);
  expect(after.counts).toMatchObject({ pending: 0, delivering: 0, delivered: settled.counts.delivered });
  expect(after.counts.paused).toBe(CHATS - after.counts.delivered);
  // the sends that got their 502 after the pause were not sent again: their rows wait paused
  expect([...receipts(text).keys()].filter((c) => hung.chats.has(c))).toEqual([]);
  expect(new Set(await statesOf(id, hung.chats))).toEqual(new Set(['paused']));

  expect(['running', 'pending']).toContain((await control(id, 'resume')).state);
  const done = await until(id, (s) => s.state === 'completed', 'the broadcast completes after resume');
  expect(done.counts).toMatchObject({ delivered: CHATS, paused: 0, failed: 0 });
  await expectCountsMatchSql(done);
  const times = receipts(text);
  expect(times.size).toBe(CHATS);
  expect([...times].filter(([, n]) => n > 1)).toEqual([]);
}, 90_000);

it('cancel: unsent rows (and a send in flight that ends retryable) are cancelled, the counts say so, nothing more is sent', async () => {
  const CHATS = 240;
  const text = 'broadcast four';
  const alertsBefore = await alertCount();
  const { id } = await create({ chat_ids: range(35_000, CHATS).map(String), text });
  await until(id, (s) => s.counts.delivered >= 30, 'the broadcast under way');
  const hung = await whileSendsHang(async () => expect((await control(id, 'cancel')).state).toBe('cancelled'));
  expect(hung.chats.size).toBeGreaterThan(0);

  const settled = await until(id, (s) => s.counts.delivering === 0, 'in-flight sends settled', 15_000);
  const before = receipts(text).size;
  await sleep(1_500);
  const after = await status(id);
  expect(receipts(text).size).toBe(before);
  expect(after).toMatchObject({ state: 'cancelled', counts: settled.counts });
  expect(after.counts).toMatchObject({ pending: 0, paused: 0, delivering: 0, failed: 0 });
  expect(after.counts.cancelled).toBeGreaterThan(0);
  expect(after.counts.delivered + after.counts.cancelled).toBe(CHATS);
  expect(after.counts.delivered).toBe(before);
  expect(new Set(await statesOf(id, hung.chats))).toEqual(new Set(['failed:cancelled']));
  // their ledger jobs are cancelled too, and a cancelled message raises no alert
  const jobs = await fleet.db.pool.query<{ state: string }>(
    `select distinct j.state from tg_relay_boss.job j join relay.outbound o on o.job_id = j.id
      where o.broadcast_id = $1::bigint and o.failed_reason = 'cancelled'`,
    [id],
  );
  expect(jobs.rows.map((r) => r.state)).toEqual(['cancelled']);
  expect(await alertCount()).toBe(alertsBefore);
}, 60_000);

it('403 blocked / deactivated: terminal, counted as blocked, recorded in chat_status, no alert; the next broadcast skips them unless include_blocked', async () => {
  const { db, sb } = fleet;
  const chats = range(40_000, 90);
  const blocked = chats.slice(0, 20);
  const deactivated = chats.slice(20, 30);
  for (const c of blocked) sb.scriptChatError(TOKEN, c, 'blocked');
  for (const c of deactivated) sb.scriptChatError(TOKEN, c, 'deactivated');
  const alertsBefore = await alertCount();
  const callsTo = (text: string, some: number[]) =>
    sb
      .calls(TOKEN, { method: 'sendMessage' })
      .filter((c) => c.params.text === text && some.includes(Number(c.params.chat_id))).length;

  const first = await create({ chat_ids: chats.map(String), text: 'broadcast five' });
  const one = await until(first.id, (s) => s.state === 'completed', 'the first broadcast completes');
  expect(one.counts).toMatchObject({ delivered: 60, blocked: 30, failed: 0, skipped: 0 });
  await expectCountsMatchSql(one);
  // terminal: one call per refusing chat, never retried
  expect(callsTo('broadcast five', [...blocked, ...deactivated])).toBe(30);
  const status = await db.pool.query<{ chat_id: string; status: string }>(
    `select chat_id, status from relay.chat_status where bot_id = $1 order by chat_id::bigint`,
    [BOT],
  );
  expect(status.rows).toEqual([
    ...blocked.map((c) => ({ chat_id: String(c), status: 'blocked' })),
    ...deactivated.map((c) => ({ chat_id: String(c), status: 'deactivated' })),
  ]);
  expect(await alertCount()).toBe(alertsBefore);

  const second = await create({ chat_ids: chats.map(String), text: 'broadcast six' });
  expect(second).toMatchObject({ recipients: 60, skipped: 30 });
  const two = await until(second.id, (s) => s.state === 'completed', 'the second broadcast completes');
  expect(two.counts).toMatchObject({ delivered: 60, blocked: 0, skipped: 30 });
  await expectCountsMatchSql(two);
  expect(callsTo('broadcast six', [...blocked, ...deactivated])).toBe(0);

  // 10 users unblocked the bot meanwhile: include_blocked reaches them, the other 20 refuse again
  for (const c of blocked.slice(0, 10)) sb.scriptChatError(TOKEN, c, null);
  const third = await create({ chat_ids: chats.map(String), text: 'broadcast seven', include_blocked: true });
  expect(third).toMatchObject({ recipients: 90, skipped: 0 });
  const three = await until(third.id, (s) => s.state === 'completed', 'the third broadcast completes');
  expect(three.counts).toMatchObject({ delivered: 70, blocked: 20, skipped: 0 });
  await expectCountsMatchSql(three);
  expect(receipts('broadcast seven').size).toBe(70);
  const still = await db.pool.query(`select count(*)::int as n from relay.chat_status where bot_id = $1`, [BOT]);
  expect(still.rows[0].n).toBe(20);
  expect(await alertCount()).toBe(alertsBefore);
}, 60_000);
