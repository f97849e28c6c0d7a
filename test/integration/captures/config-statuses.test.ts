/**
 * a real collector HTTP
 * server answering 302/303/307 (redirects are never followed: a 302/303 would become a GET without
 * the body, answered 200) or 401/403/404. Captures are not delivered and not failed: they are kept
 * and retried with backoff past the attempt budget, the condition is recorded for /health/ready
 * (relay.config_problems) and alerted once; once the collector answers 200, all are delivered and the
 * condition clears.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createBoss, Pool } from '../../../libs/db';
import { readinessChecker } from '../../../libs/admin/health';
import { outboundSettingsSave } from '../../../libs/outbound';
import { captureStates, insertCaptures } from '../../support/capture-fixtures';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import { startCaptureWorker } from '../../support/worker-harness';
import type { Worker } from '../../../libs/queue';

/** A collector whose answer to POST /capture is switchable; GET /moved answers 200 (where fetch would land after following). */
function switchableCollector() {
  let answer = 200;
  const seen: { method: string; url: string; bodyBytes: number }[] = [];
  const server = http.createServer((req, res) => {
    let n = 0;
    req.on('data', (c: Buffer) => (n += c.length));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', bodyBytes: n });
      if (req.url === '/capture' && req.method === 'POST' && answer >= 300 && answer < 400) {
        res.writeHead(answer, { location: '/moved' }).end();
      } else if (req.url === '/capture' && req.method === 'POST') {
        res
          .writeHead(answer, { 'content-type': 'application/json' })
          .end(answer === 200 ? '{"ok":true}' : '{"error":"nope"}');
      } else {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'); // /moved: a GET "succeeds"
      }
    });
  });
  return {
    set: (status: number) => void (answer = status),
    seen,
    start: () =>
      new Promise<string>((r) =>
        server.listen(0, '127.0.0.1', () => r(`http://127.0.0.1:${(server.address() as AddressInfo).port}/capture`)),
      ),
    stop: () => new Promise<void>((r) => server.close(() => r())),
  };
}

let db: { url: string; pool: Pool; drop(): Promise<void> };
let collector: ReturnType<typeof switchableCollector>;
let captureUrl: string;
let worker: Worker | undefined;
const boss = () => createBoss(db.url, { max: 1 });
const readiness = () =>
  readinessChecker({
    pool: db.pool,
    clock: () => new Date(),
    pollTimeoutMs: 30_000,
    botIds: [],
    ingressHealth: () => Promise.resolve({ ready: true, reasons: [], generation: 1, owner: 'x' }),
  })();

beforeAll(async () => {
  db = await createMigratedDatabase('cap_cfg');
  collector = switchableCollector();
  captureUrl = await collector.start();
  await outboundSettingsSave(db.pool, { botId: '1', defaultChatId: '-100777' }); // the operators' chat for alerts
});
afterEach(async () => {
  await worker?.stop({ timeoutMs: 5_000 });
  worker = undefined;
  collector.seen.length = 0;
  await db.pool.query(
    'truncate relay.captures, relay.attempts, relay.config_problems, relay.outbound_uploads, relay.outbound',
  );
});
afterAll(async () => {
  await collector.stop();
  await db.drop();
});

const configAttempts = async () =>
  Number(
    (await db.pool.query(`select count(*) from relay.attempts where subject = 'capture' and outcome = 'retry'`)).rows[0]
      .count,
  );
const problems = async () =>
  (await db.pool.query('select component, bot_id, code, status, reason, occurrences from relay.config_problems')).rows;
const alerts = async () =>
  (await db.pool.query(`select msg_id, text, chat_id from relay.outbound where kind = 'alert'`)).rows;

describe('collector answers that mean the configuration is wrong', () => {
  it.each([302, 303, 307, 401, 403, 404])(
    'HTTP %i: the backlog is kept past its budget, reported in /health/ready, alerted once; fixed → delivered',
    async (status) => {
      collector.set(status);
      await insertCaptures(db.pool, boss(), 4);
      worker = startCaptureWorker({
        url: db.url,
        pool: db.pool,
        captureUrl,
        config: { retry: { baseMs: 10, capMs: 40, maxAttempts: 2 } },
      });
      await worker.start();
      // every capture tried at least three times with a budget of two: never failed, never delivered
      await waitFor(async () => (await configAttempts()) >= 12, { what: 'repeated attempts', timeoutMs: 20_000 });
      const states = await captureStates(db.pool);
      expect(states.map((s) => s.state).filter((s) => s !== 'pending' && s !== 'delivering')).toEqual([]);
      expect(states.every((s) => s.lastStatus === null || s.lastStatus === status)).toBe(true);
      // a redirect was never followed (no GET to the Location), every request was the POST with its body
      expect(collector.seen.filter((r) => r.method !== 'POST' || r.url !== '/capture')).toEqual([]);
      expect(collector.seen.every((r) => r.bodyBytes > 0)).toBe(true);

      const [p, ...more] = await problems();
      expect(more).toEqual([]);
      expect(p).toMatchObject({ component: 'capture', code: `HTTP_${status}`, status });
      expect(Number(p.occurrences)).toBeGreaterThanOrEqual(3);
      const ready = await readiness();
      expect(ready.ready).toBe(false);
      expect(ready.reasons).toEqual([
        expect.stringMatching(new RegExp(`^capture delivery: collector answered ${status} `)),
      ]);
      const a = await alerts();
      expect(a).toHaveLength(1);
      expect(a[0]).toMatchObject({ chat_id: '-100777', text: expect.stringContaining(`collector answered ${status}`) });

      collector.set(200);
      await waitFor(async () => (await captureStates(db.pool)).every((s) => s.state === 'delivered'), {
        what: 'all delivered once fixed',
        timeoutMs: 20_000,
      });
      expect(await problems()).toEqual([]);
      expect((await readiness()).ready).toBe(true);
      expect(await alerts()).toHaveLength(1);

      // the condition comes back (a flapping collector): reported again, but no second alert within the hour
      collector.set(status);
      await insertCaptures(db.pool, boss(), 1);
      await waitFor(async () => (await problems()).length === 1, { what: 'a second episode recorded' });
      expect((await readiness()).ready).toBe(false);
      expect(await alerts()).toHaveLength(1);
    },
  );

  it('other 4xx still fail the capture at once (the document itself is refused)', async () => {
    collector.set(422);
    await insertCaptures(db.pool, boss(), 2);
    worker = startCaptureWorker({
      url: db.url,
      pool: db.pool,
      captureUrl,
      config: { retry: { baseMs: 10, capMs: 40, maxAttempts: 2 } },
    });
    await worker.start();
    await waitFor(async () => (await captureStates(db.pool)).every((s) => s.state === 'failed'), {
      what: 'failed at once',
    });
    expect((await captureStates(db.pool)).map((s) => s.attempts)).toEqual([1, 1]);
    expect(await problems()).toEqual([]);
  });
});
