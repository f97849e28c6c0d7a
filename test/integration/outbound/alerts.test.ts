/** The alert path at the database level: one kind=alert message per failed message, loop-guarded. */
import type { BossLedger } from '../../../libs/db/boss';
import { createBoss, withTransaction } from '../../../libs/db';
import { enqueueOutbound, outboundRaiseAlerts } from '../../../libs/outbound';
import { createMigratedDatabase } from '../../support/db';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let boss: BossLedger;
const defaults = { botId: '1', defaultChatId: '-100999' };

beforeAll(async () => {
  db = await createMigratedDatabase('ob_alert');
  boss = createBoss(db.url, { max: 1 });
});
afterAll(async () => {
  await boss.stop({ graceful: false, wait: true }).catch(() => undefined);
  await db.drop();
});

async function failed(msgId: string, kind: 'message' | 'alert' = 'message'): Promise<string> {
  const r = await withTransaction(db.pool, (c) =>
    enqueueOutbound(c, boss, { msg_id: msgId, chat_id: 5, text: 'secret user text', kind }, defaults),
  );
  await db.pool.query(
    `update relay.outbound set state = 'failed', attempts = 2, failed_reason = 'Forbidden: bot was blocked by the user' where id = $1`,
    [r.id],
  );
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
    const created = await outboundRaiseAlerts(db.pool, ids, '-100999');
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
