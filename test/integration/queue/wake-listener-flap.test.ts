/**
 * A LISTEN connection that is dropped right after it is made (a pooler, a tiny
 * idle_session_timeout) is re-made with a growing backoff: each reconnect wakes every claim loop, so
 * a fixed 100 ms retry would wake them ten times a second for as long as it lasts.
 */
import { Pool } from '../../../libs/db';
import { createWakeListener, type WakeListener } from '../../../libs/queue/wake-listener';
import { createMigratedDatabase } from '../../support/db';
import { testLogger } from '../../support/worker-harness';

let db: { url: string; pool: Pool; drop(): Promise<void> };
let listener: WakeListener | undefined;

beforeAll(async () => {
  db = await createMigratedDatabase('listenflap');
});
afterAll(async () => {
  await listener?.stop();
  await db.drop();
});

it('reconnects after repeated drops back off instead of every 100 ms', async () => {
  const app = 'tg-relay:test-listen-flap';
  listener = createWakeListener({ url: db.url, logger: testLogger(), applicationName: app });
  let wakes = 0;
  listener.subscribe('capture.deliver', () => wakes++);
  await listener.start();
  expect(listener.connected).toBe(true);
  const first = wakes;
  const until = Date.now() + 2_500;
  while (Date.now() < until) {
    // every LISTEN connection dies as soon as it is seen
    await db.pool.query(
      'select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1 and pid <> pg_backend_pid()',
      [app],
    );
    await new Promise((r) => setTimeout(r, 20));
  }
  // backoff 100, 200, 400, 800 ms: about 4 reconnects in 2.5 s; a fixed 100 ms made about 20
  expect(wakes - first).toBeGreaterThanOrEqual(2);
  expect(wakes - first).toBeLessThanOrEqual(7);
});
