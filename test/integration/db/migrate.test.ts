import { listMigrations, migrate, migrateAll, migrationStatus, Pool, createPool } from '../../../libs/db';
import { createTestDatabase } from '../../support/db';
import { runCli } from '../../support/cli';

const TABLES = [
  'alert_windows',
  'attempts',
  'bots',
  'broadcast_audiences',
  'broadcast_recipients',
  'broadcasts',
  'captures',
  'chat_status',
  'config_problems',
  'cursor',
  'inbox',
  'ingress_members',
  'jetstream_alert_cursor',
  'jetstream_rejects',
  'outbound',
  'outbound_bot_rate',
  'outbound_chat_rate',
  'outbound_settings',
  'outbound_uploads',
  'prune_runs',
  'quarantine',
  'schema_migrations',
  'schema_repeatables',
  'sessions',
  'superseded_jobs',
];

async function schemaSnapshot(pool: Pool): Promise<string> {
  const { rows } = await pool.query(
    `select table_name, column_name, data_type, is_nullable
       from information_schema.columns where table_schema = 'relay' order by table_name, ordinal_position`,
  );
  return JSON.stringify(rows);
}

describe('migrations', () => {
  it('create the whole data contract, then re-run as a no-op', async () => {
    const db = await createTestDatabase('mig');
    const pool = createPool(db.url, { max: 2 });
    try {
      const before = await migrationStatus(pool);
      expect(before.current).toBe(false);
      expect(before.applied).toEqual([]);

      const first = await migrate(pool);
      expect(first).toEqual(listMigrations().map((m) => m.version));
      const snapshot = await schemaSnapshot(pool);
      const { rows } = await pool.query(
        `select table_name from information_schema.tables where table_schema = 'relay' order by 1`,
      );
      expect(rows.map((r) => r.table_name)).toEqual(TABLES);

      expect(await migrate(pool)).toEqual([]);
      expect(await schemaSnapshot(pool)).toBe(snapshot);
      expect((await migrationStatus(pool)).current).toBe(true);
    } finally {
      await pool.end();
      await db.drop();
    }
  });

  it('constrain states to their lowercase words and enforce the idempotency keys', async () => {
    const db = await createTestDatabase('mig');
    await migrateAll(db.url);
    const pool = createPool(db.url, { max: 2 });
    try {
      await expect(
        pool.query(
          `insert into relay.inbox (bot_id, update_id, update_type, payload, state) values ('1', 1, 'message', '{}', 'done')`,
        ),
      ).rejects.toMatchObject({ code: '23514' });
      await pool.query(
        `insert into relay.inbox (bot_id, update_id, update_type, payload) values ('1', 1, 'message', '{}')`,
      );
      await expect(
        pool.query(
          `insert into relay.inbox (bot_id, update_id, update_type, payload) values ('1', 1, 'message', '{}')`,
        ),
      ).rejects.toMatchObject({
        code: '23505',
      });
      const capture = `insert into relay.captures (capture_key, bot_id, update_id, chat_id, message_id, payload, payload_sha256, state)
                       values ('telegram:1:2:3', '1', 1, 2, 3, '{}', 'x', $1)`;
      await expect(pool.query(capture, ['Pending'])).rejects.toMatchObject({ code: '23514' });
      await pool.query(capture, ['pending']);
      await expect(pool.query(capture, ['pending'])).rejects.toMatchObject({ code: '23505' });
      const outbound = `insert into relay.outbound (msg_id, bot_id, chat_id, target_chat_id, text, payload_sha256) values ('m1', '1', '5', '5', $1, 'x')`;
      await expect(pool.query(outbound, [''])).rejects.toMatchObject({ code: '23514' });
      await expect(pool.query(outbound, ['x'.repeat(4097)])).rejects.toMatchObject({ code: '23514' });
      await pool.query(outbound, ['hello']);
      await expect(pool.query(outbound, ['hello'])).rejects.toMatchObject({ code: '23505' });
      // pg-boss lives in its own schema, with our three queues
      const queues = await pool.query(`select name from tg_relay_boss.queue order by name`);
      expect(queues.rows.map((r) => r.name)).toEqual(['capture.deliver', 'outbound.send', 'update.dispatch']);
    } finally {
      await pool.end();
      await db.drop();
    }
  });

  it('five concurrent `tg-relay migrate` on an empty database all exit 0 and leave one consistent schema', async () => {
    const db = await createTestDatabase('mig');
    const reference = await createTestDatabase('mig');
    const pool = createPool(db.url, { max: 2 });
    const refPool = createPool(reference.url, { max: 2 });
    try {
      const runs = await Promise.all(
        Array.from({ length: 5 }, () => runCli(['migrate'], { DATABASE_URL: db.url }, { timeoutMs: 90_000 })),
      );
      for (const r of runs) expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
      const versions = await pool.query('select version from relay.schema_migrations order by version');
      expect(versions.rows.map((r) => r.version)).toEqual(listMigrations().map((m) => m.version));
      await migrate(refPool);
      expect(await schemaSnapshot(pool)).toBe(await schemaSnapshot(refPool));
      const queues = await pool.query(`select count(*)::int as n from tg_relay_boss.queue`);
      expect(queues.rows[0].n).toBe(3);
    } finally {
      await pool.end();
      await refPool.end();
      await db.drop();
      await reference.drop();
    }
  });
});
