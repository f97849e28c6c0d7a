/**
 * The alert path at the database level: the first failure of a window is alerted at once, the
 * others of the window held back for one summary when it closes (ALERT_COALESCE); loop-guarded.
 * Each test starts with no window open, so its first failure gets its own alert.
 */
import type { BossLedger } from '../../../libs/db/boss';
import { createBoss, withTransaction } from '../../../libs/db';
import { enqueueOutbound, outboundAlertWindowsFlush, outboundRaiseAlerts } from '../../../libs/outbound';
import { waitFor } from '../../support/wait-for';
import { createMigratedDatabase } from '../../support/db';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let boss: BossLedger;
const defaults = { botId: '1', defaultChatId: '-100999' };

beforeAll(async () => {
  db = await createMigratedDatabase('ob_alert');
  boss = createBoss(db.url, { max: 1 });
});
beforeEach(() => db.pool.query('truncate relay.alert_windows'));
afterAll(async () => {
  await boss.stop({ graceful: false, wait: true }).catch(() => undefined);
  await db.drop();
});

async function failed(
  msgId: string,
  kind: 'message' | 'alert' | 'reply' = 'message',
  reason = 'Forbidden: bot was blocked by the user',
): Promise<string> {
  const r = await withTransaction(db.pool, (c) =>
    enqueueOutbound(c, boss, { msg_id: msgId, chat_id: 5, text: 'secret user text', kind }, defaults),
  );
  await db.pool.query(`update relay.outbound set state = 'failed', attempts = 2, failed_reason = $2 where id = $1`, [
    r.id,
    reason,
  ]);
  return r.id;
}
const alertsFor = async (msgId: string) =>
  (await db.pool.query(`select * from relay.outbound where msg_id = $1`, [`alert:${msgId}`])).rows;

describe('alerts for failed messages', () => {
  it("enqueue one kind=alert message to the operators' chat, with ids and the reason but not the text", async () => {
    const id = await failed('m-1');
    const created = await outboundRaiseAlerts(db.pool, [id], '-100999');
    expect(created).toHaveLength(1);
    const [alert] = await alertsFor('m-1');
    expect(alert).toMatchObject({
      kind: 'alert',
      chat_id: '-100999',
      target_chat_id: '-100999',
      state: 'pending',
      bot_id: '1',
      delivery: 'at_least_once',
    });
    expect(alert.text).toContain('msg_id: m-1');
    expect(alert.text).toContain('Forbidden: bot was blocked by the user');
    expect(alert.text).not.toContain('secret user text');
    const job = (await db.pool.query(`select * from tg_relay_boss.job where id = $1`, [alert.job_id])).rows[0];
    expect(job).toMatchObject({ name: 'outbound.send', state: 'created' });
  });

  it('raise exactly one alert per failed message, however often the failure is settled again', async () => {
    const id = await failed('m-2');
    await outboundRaiseAlerts(db.pool, [id], '-100999');
    await outboundRaiseAlerts(db.pool, [id], '-100999');
    await db.pool.query(`update relay.outbound set failed_reason = 'another reason' where id = $1`, [id]);
    expect(await outboundRaiseAlerts(db.pool, [id], '-100999')).toEqual([]);
    expect(await alertsFor('m-2')).toHaveLength(1);
  });

  it('never raise an alert about a failed alert (loop guard), nor about a message that did not fail', async () => {
    const alertId = await failed('m-3', 'alert');
    const pending = await withTransaction(db.pool, (c) =>
      enqueueOutbound(c, boss, { msg_id: 'm-4', chat_id: 5, text: 'x' }, defaults),
    );
    expect(await outboundRaiseAlerts(db.pool, [alertId, pending.id], '-100999')).toEqual([]);
    expect(await alertsFor('m-3')).toHaveLength(0);
    expect(await alertsFor('m-4')).toHaveLength(0);
  });

  it("raise none when no operators' chat is configured", async () => {
    const id = await failed('m-5');
    expect(await outboundRaiseAlerts(db.pool, [id], null)).toEqual([]);
  });
});

describe('alert ids: a namespace of their own, one per failed message', () => {
  it("refuse a user msg_id in the alerts' namespace (library and SQL function), so the alert of a failure is never shadowed", async () => {
    const lib = withTransaction(db.pool, (c) =>
      enqueueOutbound(c, boss, { msg_id: 'alert:m-6', chat_id: 5, text: 'x' }, defaults),
    );
    await expect(lib).rejects.toMatchObject({
      code: 'RELAY_OUTBOUND_INVALID',
      problems: [{ field: 'msg_id', problem: expect.stringContaining('"alert:"') }],
    });
    const sql = db.pool.query(`select * from relay.enqueue_outbound('alert:m-6', '5', 'x', bot_id => '1')`);
    await expect(sql).rejects.toMatchObject({
      code: 'TR422',
      message: expect.stringContaining('RELAY_OUTBOUND_INVALID: msg_id'),
    });
    const id = await failed('m-6');
    expect(await outboundRaiseAlerts(db.pool, [id], '-100999')).toHaveLength(1);
    expect(await alertsFor('m-6')).toMatchObject([{ kind: 'alert', chat_id: '-100999' }]);
  });

  it('give two long msg_ids sharing their first 250 characters two alerts, each naming its own message', async () => {
    const common = 'x'.repeat(250);
    const ids = [await failed(`${common}-one`), await failed(`${common}-two`)];
    const created = await outboundRaiseAlerts(db.pool, [ids[0]], '-100999');
    await db.pool.query('truncate relay.alert_windows'); // the second one opens a window of its own
    created.push(...(await outboundRaiseAlerts(db.pool, [ids[1]], '-100999')));
    expect(created).toHaveLength(2);
    const alerts = (
      await db.pool.query(`select msg_id, text from relay.outbound where id = any($1::bigint[]) order by id`, [created])
    ).rows;
    expect(alerts.map((a) => a.text.includes(`msg_id: ${common}-one`))).toEqual([true, false]);
    expect(alerts.map((a) => a.text.includes(`msg_id: ${common}-two`))).toEqual([false, true]);
    for (const a of alerts)
      expect([a.msg_id.startsWith(`alert:${'x'.repeat(100)}`), [...a.msg_id].length]).toEqual([true, 256]);
    // settled again: still one each
    expect(await outboundRaiseAlerts(db.pool, ids, '-100999')).toEqual([]);
  });

  it('raise the alert under a hashed id when a message enqueued before the namespace was reserved holds alert:<msg_id>', async () => {
    await db.pool.query(
      `insert into relay.outbound (msg_id, bot_id, chat_id, target_chat_id, text, kind, delivery, payload_sha256)
       values ('alert:m-7', '1', '5', '5', 'an old user message', 'message', 'at_least_once', 'x')`,
    );
    const id = await failed('m-7');
    const created = await outboundRaiseAlerts(db.pool, [id], '-100999');
    expect(created).toHaveLength(1);
    const alert = (await db.pool.query(`select * from relay.outbound where id = $1`, [created[0]])).rows[0];
    expect(alert).toMatchObject({
      kind: 'alert',
      chat_id: '-100999',
      msg_id: expect.stringMatching(/^alert:m-7~[0-9a-f]{64}$/),
    });
    expect(alert.text).toContain('msg_id: m-7');
    expect(await outboundRaiseAlerts(db.pool, [id], '-100999')).toEqual([]);
  });

  it("keep a message whose msg_id starts with config: clear of the configuration-problem alerts' ids", async () => {
    const id = await failed('config:outbound:1:493000');
    await db.pool.query(
      `insert into relay.outbound (msg_id, bot_id, chat_id, target_chat_id, text, kind, delivery, payload_sha256)
       values ('alert:config:outbound:1:493000', '1', '-100999', '-100999', 'misconfigured', 'alert', 'at_least_once', 'x')`,
    );
    expect(await outboundRaiseAlerts(db.pool, [id], '-100999')).toHaveLength(1);
  });
});

describe('coalesced alerts (ALERT_COALESCE)', () => {
  const WINDOW_MS = 400;
  const alerts = async () =>
    (
      await db.pool.query<{ msg_id: string; text: string; kind: string; chat_id: string }>(
        `select msg_id, text, kind, chat_id from relay.outbound where kind = 'alert' and msg_id like 'alert:%w-%' or msg_id like 'alert:window:%' order by id`,
      )
    ).rows;
  beforeEach(() => db.pool.query(`delete from relay.outbound where kind = 'alert'`));

  it('alert the first failure at once, hold back the rest of the window, and summarise them in one alert when it closes', async () => {
    const first = await failed('w-1');
    expect(await outboundRaiseAlerts(db.pool, [first], '-100999', WINDOW_MS)).toHaveLength(1);
    const later: string[] = [];
    for (let i = 2; i <= 13; i++)
      later.push(
        await failed(`w-${i}`, i % 4 === 0 ? 'reply' : 'message', i % 3 === 0 ? 'Bad Request: x' : 'Forbidden: y'),
      );
    // one settle transaction with several failures, then one at a time: none is alerted inside the window
    expect(await outboundRaiseAlerts(db.pool, later.slice(0, 6), '-100999', WINDOW_MS)).toEqual([]);
    for (const id of later.slice(6)) expect(await outboundRaiseAlerts(db.pool, [id], '-100999', WINDOW_MS)).toEqual([]);
    expect(await outboundAlertWindowsFlush(db.pool, WINDOW_MS)).toEqual([]); // not over yet
    expect((await alerts()).map((a) => a.msg_id)).toEqual(['alert:w-1']);

    const summary = await waitFor(async () => {
      const ids = await outboundAlertWindowsFlush(db.pool, WINDOW_MS);
      return ids.length > 0 ? ids : undefined;
    });
    expect(summary).toHaveLength(1);
    const all = await alerts();
    expect(all.map((a) => a.msg_id)).toEqual(['alert:w-1', 'alert:window:1:-100999:1']);
    const text = all[1].text;
    // w-2..w-13: 12 held back; reasons: i%3==0 → 'Bad Request: x' (3,6,9,12), the other 8 'Forbidden: y'
    expect(text).toContain('12 more outbound messages failed');
    expect(text).toContain('  8 × Forbidden: y\n  4 × Bad Request: x');
    expect(text).toContain('by kind: message 9, reply 3');
    expect(text).toContain('first msg_ids: w-2, w-3, w-4, w-5, w-6\n');
    expect(text).not.toContain('secret user text');
    expect(all[1]).toMatchObject({ kind: 'alert', chat_id: '-100999' });
    // the summary opened the next window: a failure now is held back, not alerted
    expect(await outboundRaiseAlerts(db.pool, [await failed('w-14')], '-100999', WINDOW_MS)).toEqual([]);
    // settled again: counted once
    expect(await outboundRaiseAlerts(db.pool, later, '-100999', WINDOW_MS)).toEqual([]);
    expect((await db.pool.query('select failures from relay.alert_windows')).rows).toEqual([{ failures: 1 }]);
  });

  it('a failure after the window, before any tick, closes it with the summary including itself; a window with nothing held back lapses', async () => {
    await outboundRaiseAlerts(db.pool, [await failed('w-20')], '-100999', WINDOW_MS);
    await outboundRaiseAlerts(db.pool, [await failed('w-21')], '-100999', WINDOW_MS);
    await db.pool.query(`update relay.alert_windows set closes_at = now() - interval '1 second'`);
    const created = await outboundRaiseAlerts(db.pool, [await failed('w-22')], '-100999', WINDOW_MS);
    expect(created).toHaveLength(1);
    const all = await alerts();
    expect(all.map((a) => a.msg_id)).toEqual(['alert:w-20', 'alert:window:1:-100999:1']);
    expect(all[1].text).toContain('2 more outbound messages failed');
    expect(all[1].text).toContain('first msg_ids: w-21, w-22\n');
    // that window closes holding nothing: it lapses without an alert, the next failure is alerted at once
    await db.pool.query(`update relay.alert_windows set closes_at = now() - interval '1 second'`);
    expect(await outboundAlertWindowsFlush(db.pool, WINDOW_MS)).toEqual([]);
    expect(await outboundRaiseAlerts(db.pool, [await failed('w-23')], '-100999', WINDOW_MS)).toHaveLength(1);
    expect((await alerts()).map((a) => a.msg_id)).toEqual(['alert:w-20', 'alert:window:1:-100999:1', 'alert:w-23']);
  });

  it('keep a summary bounded whatever the reasons: at most 10 reasons of 120 characters, the rest counted together', async () => {
    // a window far longer than the test (closed by hand below): 41 failures recorded on a loaded machine stay in it
    const window = 60_000;
    await outboundRaiseAlerts(db.pool, [await failed('w-30')], '-100999', window);
    const ids: string[] = [];
    for (let i = 0; i < 40; i++)
      ids.push(await failed(`w-r${i}`, 'message', `Bad Request: reason ${i} ${'z'.repeat(300)}`));
    await outboundRaiseAlerts(db.pool, ids, '-100999', window);
    await db.pool.query(`update relay.alert_windows set closes_at = now() - interval '1 second'`);
    expect(await outboundAlertWindowsFlush(db.pool, window)).toHaveLength(1);
    const text = (await alerts()).at(-1)!.text;
    expect(text).toContain('40 more outbound messages failed');
    expect(text).toContain('  30 × (other reasons)');
    const reasonLines = text.split('\n').filter((l) => / × /.test(l));
    expect(reasonLines).toHaveLength(11);
    for (const l of reasonLines) expect(l.length).toBeLessThanOrEqual(2 + 4 + 120);
    expect(text.length).toBeLessThanOrEqual(4096);
  });

  it("a user msg_id shaped like a window summary's id cannot take it: it gets the hashed alert id", async () => {
    const id = await failed('window:1:-100999:1');
    const [alertId] = await outboundRaiseAlerts(db.pool, [id], '-100999', WINDOW_MS);
    const row = (await db.pool.query('select msg_id from relay.outbound where id = $1', [alertId])).rows[0];
    expect(row.msg_id).toMatch(/^alert:window:1:-100999:1~[0-9a-f]{64}$/);
  });
});
