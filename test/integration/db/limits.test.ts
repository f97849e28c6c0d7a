/**
 * The limits the relay checks in TypeScript (libs/telegram/limits.ts, libs/outbound/message.ts) are
 * the ones the database enforces: read from the migrated schema, not from the SQL files, so a
 * migration that changes one side alone fails here.
 */
import { Pool } from '../../../libs/db';
import { OUTBOUND_MSG_ID_MAX, OUTBOUND_TEXT_MAX } from '../../../libs/outbound/message';
import { TELEGRAM_TEXT_MAX } from '../../../libs/telegram/limits';
import { createMigratedDatabase } from '../../support/db';

let db: { url: string; pool: Pool; drop(): Promise<void> };

beforeAll(async () => {
  db = await createMigratedDatabase('limits');
});
afterAll(async () => {
  await db.drop();
});

it("relay.outbound's text check and relay.outbound_upsert's checks use the TypeScript limits", async () => {
  expect(OUTBOUND_TEXT_MAX).toBe(TELEGRAM_TEXT_MAX);
  const { rows } = await db.pool.query<{ def: string }>(
    `select pg_get_constraintdef(c.oid) as def from pg_constraint c
      where c.conrelid = 'relay.outbound'::regclass and c.contype = 'c' and pg_get_constraintdef(c.oid) like '%(text)%'`,
  );
  expect(rows.map((r) => r.def)).toEqual([
    expect.stringMatching(
      new RegExp(`char_length\\(text\\) >= 1\\)? AND \\(?char_length\\(text\\) <= ${OUTBOUND_TEXT_MAX}\\b`),
    ),
  ]);
  const fn = await db.pool.query<{ def: string }>(
    `select pg_get_functiondef(p.oid) as def from pg_proc p
      where p.pronamespace = 'relay'::regnamespace and p.proname = 'outbound_upsert'`,
  );
  expect(fn.rows.length).toBeGreaterThan(0);
  for (const { def } of fn.rows) {
    expect(def).toContain(`char_length(p_msg_id) not between 1 and ${OUTBOUND_MSG_ID_MAX}`);
    expect(def).toContain(`char_length(p_text) not between 1 and ${OUTBOUND_TEXT_MAX}`);
  }
});
