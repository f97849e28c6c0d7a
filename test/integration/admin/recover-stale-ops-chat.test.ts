/**
 * An OPS_CHAT_ID the configuration accepts is one the database accepts: recover-stale raises the
 * alert of a message it fails instead of answering 422, and every channel name the configuration
 * takes is one relay.outbound_normalize_chat takes (and the other way round).
 */
import type { BossLedger } from '../../../libs/db/boss';
import { ConfigError } from '../../../libs/config';
import { withTransaction } from '../../../libs/db';
import { enqueueOutbound } from '../../../libs/outbound';
import { createMigratedDatabase } from '../../support/db';
import { buildTestApp, call, startBoss, testConfig } from './support';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let boss: BossLedger;

beforeAll(async () => {
  db = await createMigratedDatabase('admin_stale_ops');
  boss = await startBoss(db.url);
});
afterAll(async () => {
  await boss?.stop({ graceful: false, wait: true });
  await db?.drop();
});

/** The configuration's verdict on OPS_CHAT_ID=value: the parsed value, or undefined when refused. */
function configured(value: string): string | undefined {
  try {
    return testConfig({ OPS_CHAT_ID: value }).OPS_CHAT_ID;
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return undefined;
  }
}

it.each([4, 5, 32, 33, 40, 64])(
  'OPS_CHAT_ID=@<%i characters>: refused by the configuration, or recover-stale alerts there',
  async (n) => {
    const value = `@${'o'.repeat(n - 1)}${n}`.slice(0, n + 1);
    const ops = configured(value);
    if (ops === undefined) return; // refused at start (exit 78): nothing runs with it
    const app = await buildTestApp(db.pool, boss, { config: testConfig({ OPS_CHAT_ID: value }) });
    try {
      const msgId = `stale-ops-${n}`;
      const m = await withTransaction(db.pool, (c) =>
        enqueueOutbound(c, boss, { msg_id: msgId, chat_id: 7, text: 'x', delivery: 'at_most_once' }, { botId: '1' }),
      );
      await db.pool.query(
        `update relay.outbound set state = 'delivering', attempts = 1, claim_id = gen_random_uuid(), worker_id = 'dead',
                started_at = now() - interval '1 minute', heartbeat_at = now() - interval '1 minute' where id = $1`,
        [m.id],
      );
      const res = await call(app, 'POST', '/v1/recover-stale', { body: { older_than: '2s', kinds: ['outbound'] } });
      expect([res.statusCode, res.json()]).toMatchObject([200, { recovered: { outbound: 1 } }]);
      const alert = (await db.pool.query(`select * from relay.outbound where msg_id = $1`, [`alert:${msgId}`])).rows[0];
      expect(alert).toMatchObject({ kind: 'alert', chat_id: value });
    } finally {
      await app.close();
    }
  },
);

it('the configuration takes exactly the channel names relay.outbound_normalize_chat takes, and no integer it refuses', async () => {
  const names = [3, 4, 5, 31, 32, 33, 40, 64, 65].map((n) => `@${'a_9Z'.repeat(20).slice(0, n)}`);
  const values = [
    ...names,
    '@ab-cd',
    '@abc.d',
    '@ab cd',
    '@',
    'abcde',
    '-1001234567890',
    '42',
    '0',
    '+5',
    '12345678901234567',
  ];
  const verdicts = [];
  for (const v of values) {
    const sql = await db.pool
      .query(`select relay.outbound_normalize_chat($1, 'OPS_CHAT_ID') as c`, [v])
      .then(() => true)
      .catch((err: { code?: string }) => {
        expect(err.code).toBe('TR422');
        return false;
      });
    verdicts.push({ value: v, config: configured(v) !== undefined, sql });
  }
  // the configuration's only stricter rule: integer ids beyond Number.MAX_SAFE_INTEGER
  expect(verdicts.filter((x) => x.config !== x.sql)).toEqual([
    { value: '12345678901234567', config: false, sql: true },
  ]);
});
