/**
 * An alert storm through real processes: 2 `tg-relay worker` processes send 500 messages that all
 * fail (two reasons), plus 50 to users who blocked the bot, against the sandbox Bot API. With
 * ALERT_COALESCE=3s the operators' chat gets at most one alert per window — at most 10 in all —
 * whose counts add up to exactly the 500 failures per reason, with no message text; the blocked
 * users raise none and are recorded in relay.chat_status.
 */
import { withTransaction } from '../../../libs/db';
import { enqueueOutboundBatch } from '../../../libs/outbound';
import { useOutboundFleet } from '../../support/outbound-fleet';
import { waitFor } from '../../support/wait-for';
import { startWorkerProcess, workerStarted } from '../../support/worker-process';

const TOKEN = '6161:alert-storm-token-not-a-secret';
const BOT = '6161';
const OPS = '-100616161';
const FAILURES = 500;
const BLOCKED = 50;
const WINDOW_MS = 3_000;
const REASONS = ['Bad Request: message is too long', "Forbidden: bot can't initiate conversation with a user"];

const fleet = useOutboundFleet('ob_alert_storm', {
  seed: 7,
  limits: { perBot: { count: 400, windowMs: 1000 }, privateChat: { count: 10, windowMs: 1000, burst: 1 } },
});

interface AlertRow {
  msg_id: string;
  text: string;
  state: string;
  created_at: Date;
}

/** How many failures an alert tells of, per reason: its own one, or a window's summary. */
function countsOf(a: AlertRow): Map<string, number> {
  const out = new Map<string, number>();
  if (!a.msg_id.startsWith('alert:window:')) {
    out.set(/\nreason: (.*)$/.exec(a.text)![1], 1);
    return out;
  }
  for (const m of a.text.matchAll(/^ {2}(\d+) × (.*)$/gm)) out.set(m[2], Number(m[1]));
  return out;
}

it('500 failures raise at most 10 alerts, one per ALERT_COALESCE window, whose counts add up to the failures', async () => {
  const { db, boss, sb, workers } = fleet;
  for (let i = 0; i < FAILURES; i++)
    sb.scriptChatError(undefined, 8_000 + i, {
      kind: 'custom',
      error_code: i % 2 ? 403 : 400,
      description: REASONS[i % 2],
    });
  for (let i = 0; i < BLOCKED; i++) sb.scriptChatError(undefined, 9_000 + i, 'blocked');
  for (let w = 0; w < 2; w++)
    workers.push(
      startWorkerProcess({
        DATABASE_URL: db.url,
        TELEGRAM_BOT_TOKEN: TOKEN,
        TELEGRAM_API_ROOT: sb.url,
        OPS_CHAT_ID: OPS,
        ALERT_COALESCE: `${WINDOW_MS}ms`,
        OUTBOUND_RATE_PER_BOT: '200/1s',
        STALE_AFTER: '30s',
      }),
    );
  await Promise.all(workers.map((w) => workerStarted(w)));
  const messages = [
    ...Array.from({ length: FAILURES }, (_, i) => ({ msg_id: `storm-${i}`, chat_id: 8_000 + i })),
    ...Array.from({ length: BLOCKED }, (_, i) => ({ msg_id: `blocked-${i}`, chat_id: 9_000 + i })),
  ];
  // in batches while the fleet runs, so the storm spans several windows
  for (let from = 0; from < messages.length; from += 110) {
    await withTransaction(db.pool, (c) =>
      enqueueOutboundBatch(
        c,
        boss,
        messages.slice(from, from + 110).map((m) => ({ ...m, text: `secret text of ${m.msg_id}` })),
        { botId: BOT },
      ),
    );
    await new Promise((r) => setTimeout(r, 1_500));
  }

  await waitFor(
    async () => {
      const { rows } = await db.pool.query(
        `select count(*)::int as n from relay.outbound where kind <> 'alert' and state = 'failed'`,
      );
      return rows[0].n === FAILURES + BLOCKED;
    },
    { timeoutMs: 60_000, intervalMs: 250, what: 'every message failed' },
  );
  // the last window closes (a worker's tick) and every alert is delivered
  await waitFor(
    async () => {
      const held = await db.pool.query(`select coalesce(sum(failures), 0)::int as n from relay.alert_windows`);
      const open = await db.pool.query(
        `select count(*)::int as n from relay.outbound where kind = 'alert' and state <> 'delivered'`,
      );
      return held.rows[0].n === 0 && open.rows[0].n === 0;
    },
    { timeoutMs: 60_000, intervalMs: 250, what: 'every failure told and every alert delivered' },
  );

  const alerts = (
    await db.pool.query<AlertRow>(
      `select msg_id, text, state, created_at from relay.outbound where kind = 'alert' order by id`,
    )
  ).rows;
  expect(alerts.length).toBeGreaterThanOrEqual(2);
  expect(alerts.length).toBeLessThanOrEqual(10);
  // one per window: each alert opened a window no other alert came into
  for (let i = 1; i < alerts.length; i++)
    expect(alerts[i].created_at.getTime() - alerts[i - 1].created_at.getTime()).toBeGreaterThanOrEqual(WINDOW_MS - 500);
  const total = new Map<string, number>();
  for (const a of alerts) for (const [reason, n] of countsOf(a)) total.set(reason, (total.get(reason) ?? 0) + n);
  expect(Object.fromEntries(total)).toEqual({ [REASONS[0]]: FAILURES / 2, [REASONS[1]]: FAILURES / 2 });
  for (const a of alerts) expect(a.text).not.toContain('secret text');

  // what the operators' chat received is exactly those alerts
  const received = sb.sent(TOKEN).filter((m) => m.resolved_chat_id === Number(OPS));
  expect(received.map((m) => m.text).sort()).toEqual(alerts.map((a) => a.text).sort());
  // the blocked users raised nothing and are recorded
  const blocked = await db.pool.query(`select count(*)::int as n from relay.chat_status where status = 'blocked'`);
  expect(blocked.rows[0].n).toBe(BLOCKED);
}, 150_000);
