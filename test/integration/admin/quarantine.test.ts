import crypto from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { BossLedger } from '../../../libs/db/boss';
import { createMigratedDatabase } from '../../support/db';
import { buildTestApp, call, startBoss } from './support';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let boss: BossLedger;
let app: FastifyInstance;

beforeAll(async () => {
  db = await createMigratedDatabase('admin_quar');
  boss = await startBoss(db.url);
  app = await buildTestApp(db.pool, boss);
});

afterAll(async () => {
  await app?.close();
  await boss?.stop({ graceful: false, wait: true });
  await db?.drop();
});

/** A quarantined item as the poller stores it under DECODE_POLICY=quarantine. */
async function quarantine(raw: string, updateId: number | null): Promise<number> {
  const { rows } = await db.pool.query(
    `insert into relay.quarantine (bot_id, update_id, raw, sha256, error, json_path, generation) values ('1000000001', $1, $2, $3, 'expected an object', '$.message.chat', 1) returning id`,
    [updateId, Buffer.from(raw, 'utf8'), crypto.createHash('sha256').update(raw).digest('hex')],
  );
  return Number(rows[0].id);
}

const message = (updateId: number) =>
  JSON.stringify({
    update_id: updateId,
    message: {
      message_id: 3,
      date: 1_700_000_000,
      chat: { id: 4242, type: 'private' },
      from: { id: 4242, is_bot: false, first_name: 'A' },
      text: 'hi',
    },
  });

describe('release', () => {
  test('an update that decodes now is persisted through the ingress path: inbox row, dispatch job, capture and its job', async () => {
    const id = await quarantine(message(7001), 7001);
    const res = await call(app, 'POST', `/v1/quarantine/${id}/release`, { body: { reason: 'decoder fixed' } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ id, state: 'released', outcome: 'persisted', update_id: 7001 });
    const inbox = (
      await db.pool.query(
        `select i.state, i.update_type, i.chat_id, j.name, j.state as job_state from relay.inbox i join tg_relay_boss.job j on j.id = i.job_id where i.update_id = 7001`,
      )
    ).rows;
    expect(inbox).toEqual([
      { state: 'pending', update_type: 'message', chat_id: '4242', name: 'update.dispatch', job_state: 'created' },
    ]);
    const cap = (
      await db.pool.query(
        `select c.capture_key, j.name from relay.captures c join tg_relay_boss.job j on j.id = c.job_id where c.update_id = 7001`,
      )
    ).rows;
    expect(cap).toEqual([{ capture_key: 'telegram:1000000001:7001:4242:3', name: 'capture.deliver' }]);
    const q = (
      await db.pool.query(
        `select state, resolved_at is not null as resolved, octet_length(raw) > 0 as kept from relay.quarantine where id = $1`,
        [id],
      )
    ).rows[0];
    expect(q).toEqual({ state: 'released', resolved: true, kept: true });
    const again = await call(app, 'POST', `/v1/quarantine/${id}/release`);
    expect([again.statusCode, again.json().code]).toEqual([409, 'RELAY_ADMIN_NOT_QUARANTINED']);
  });

  test('an update already in the inbox is released as a duplicate, nothing added', async () => {
    const first = await quarantine(message(7002), 7002);
    await call(app, 'POST', `/v1/quarantine/${first}/release`);
    await db.pool.query(`delete from relay.quarantine where id = $1`, [first]); // a second copy, as if quarantined again
    const second = await quarantine(message(7002), 7002);
    const res = await call(app, 'POST', `/v1/quarantine/${second}/release`);
    expect(res.json()).toMatchObject({ state: 'released', outcome: 'duplicate', update_id: 7002 });
    expect((await db.pool.query(`select count(*)::int as n from relay.inbox where update_id = 7002`)).rows[0].n).toBe(
      1,
    );
  });

  test('bytes that still do not decode are a 409, the item stays quarantined, the refusal is audited', async () => {
    const id = await quarantine('{"update_id": 7003, "message": {"chat": "oops"}}', 7003);
    const res = await call(app, 'POST', `/v1/quarantine/${id}/release`);
    expect(res.statusCode).toBe(409);
    expect(res.json()).toMatchObject({ code: 'RELAY_ADMIN_RELEASE_FAILED', cause: 'RELAY_QUARANTINE_UNDECODABLE' });
    expect(res.json().message).toMatch(/still does not decode/);
    expect((await db.pool.query(`select state from relay.quarantine where id = $1`, [id])).rows[0].state).toBe(
      'quarantined',
    );
    expect((await db.pool.query(`select count(*)::int as n from relay.inbox where update_id = 7003`)).rows[0].n).toBe(
      0,
    );
    const detail = (await call(app, 'GET', `/v1/quarantine/${id}`)).json();
    expect(detail.history.map((h: { outcome: string; error_code: string }) => [h.outcome, h.error_code])).toEqual([
      ['admin.release', 'RELAY_ADMIN_RELEASE_FAILED'],
    ]);
  });
  test('an update kept for a capture key conflict is refused (409) while another capture holds its key, and nothing of it is written', async () => {
    // as ingress keeps it: its capture key is stored with different data (an earlier update of the bot under a reused id)
    await db.pool.query(
      `insert into relay.captures (capture_key, bot_id, update_id, chat_id, message_id, payload, payload_raw, payload_sha256)
       values ('telegram:1000000001:7004:4242:3', '1000000001', 7004, 4242, 3, '{}', '{}', 'another-sha')`,
    );
    const id = await quarantine(message(7004), 7004);
    const res = await call(app, 'POST', `/v1/quarantine/${id}/release`);
    expect(res.statusCode).toBe(409);
    expect(res.json()).toMatchObject({
      code: 'RELAY_ADMIN_RELEASE_FAILED',
      cause: 'RELAY_CAPTURE_KEY_CONFLICT',
      message: 'its capture key is already stored with different data',
    });
    expect((await db.pool.query(`select state from relay.quarantine where id = $1`, [id])).rows[0].state).toBe(
      'quarantined',
    );
    expect((await db.pool.query(`select count(*)::int as n from relay.inbox where update_id = 7004`)).rows[0].n).toBe(
      0,
    );
    expect(
      (
        await db.pool.query(
          `select payload_sha256 from relay.captures where capture_key = 'telegram:1000000001:7004:4242:3'`,
        )
      ).rows,
    ).toEqual([{ payload_sha256: 'another-sha' }]);
  });
});

describe('discard', () => {
  test('marks the item discarded and keeps its bytes; a second discard is 409; unknown ids 404', async () => {
    const id = await quarantine('not json', null);
    const res = await call(app, 'POST', `/v1/quarantine/${id}/discard`);
    expect(res.json()).toMatchObject({ id, state: 'discarded' });
    const q = (
      await db.pool.query(`select state, convert_from(raw, 'UTF8') as raw from relay.quarantine where id = $1`, [id])
    ).rows[0];
    expect(q).toEqual({ state: 'discarded', raw: 'not json' });
    expect((await call(app, 'POST', `/v1/quarantine/${id}/discard`)).statusCode).toBe(409);
    expect((await call(app, 'POST', `/v1/quarantine/${id}/release`)).json().code).toBe('RELAY_ADMIN_NOT_QUARANTINED');
    expect((await call(app, 'POST', '/v1/quarantine/999999/discard')).statusCode).toBe(404);
    expect(
      (await call(app, 'GET', '/v1/quarantine?state=discarded')).json().items.map((r: { id: number }) => r.id),
    ).toEqual([id]);
  });
});
