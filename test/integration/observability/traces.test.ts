/**
 * OpenTelemetry traces across real processes: a `tg-relay poller` and a `tg-relay worker`
 * (echo bot, REPLY_MODE=outbound, captures on) export to an in-test OTLP/HTTP receiver (http/json).
 * For each update ONE trace holds the poller's batch span, the worker's handler run, the reply's
 * sendMessage attempt and the capture delivery; the trace context crossed processes only through
 * the database. Also: no token and no message text in any exported byte, a message enqueued over
 * HTTP with a traceparent joins that trace, malformed traceparents break nothing, and with tracing
 * off nothing is exported at all.
 */
import crypto from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { BossLedger } from '../../../libs/db/boss';
import { createBoss } from '../../../libs/db';
import type { BotApiSandbox } from '../../../libs/sandbox';
import { freePort } from '../../../libs/db';
import { exited, startCli } from '../../support/cli';
import { createMigratedDatabase } from '../../support/db';
import { newBotToken, startSandbox } from '../../support/ingress-harness';
import { killHard, PollerProcess, startPollerProcess } from '../../support/ingress-processes';
import { ReceivedSpan, startOtlpReceiver, tracingEnv, type OtlpReceiver } from '../../support/otlp-receiver';
import { startWebhookReceiver } from '../../support/sandbox-helpers';
import { waitFor } from '../../support/wait-for';
import { killWorker, startWorkerProcess, workerStarted, type WorkerProcess } from '../../support/worker-process';
import { buildTestApp, call, OPS_TOKEN, startBoss, testConfig } from '../admin/support';
import { storeUpdates } from '../dispatch/helpers';

jest.setTimeout(120_000);

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let sandbox: BotApiSandbox;
let receiver: OtlpReceiver;
let collector: Awaited<ReturnType<typeof startWebhookReceiver>>;
const procs: Array<PollerProcess | WorkerProcess> = [];

beforeAll(async () => {
  db = await createMigratedDatabase('otel_traces');
  sandbox = await startSandbox({ limits: { enabled: false } });
  collector = await startWebhookReceiver();
});
beforeEach(async () => {
  receiver = await startOtlpReceiver();
});
afterEach(async () => {
  for (const p of procs.splice(0)) await (p.spawnargs.includes('poller') ? killHard(p) : killWorker(p));
  await receiver.close();
});
afterAll(async () => {
  await collector?.close();
  await sandbox?.stop();
  await db?.drop();
});

function worker(token: string, env: Record<string, string>): WorkerProcess {
  const w = startWorkerProcess({
    DATABASE_URL: db.url,
    TELEGRAM_BOT_TOKEN: token,
    TELEGRAM_API_ROOT: sandbox.url,
    BOT_HANDLERS: 'examples/echo-bot.ts',
    REPLY_MODE: 'outbound',
    CAPTURE_URL: collector.url,
    OPS_CHAT_ID: '999',
    ...env,
  });
  procs.push(w);
  return w;
}
function poller(token: string, env: Record<string, string>): PollerProcess {
  const p = startPollerProcess({ databaseUrl: db.url, apiRoot: sandbox.url, token, extra: env });
  procs.push(p);
  return p;
}
async function stop(p: PollerProcess | WorkerProcess): Promise<void> {
  p.kill('SIGTERM');
  expect(await exited(p)).toEqual({ code: 0, signal: null });
}

const sentTo = (token: string, chat: number) => sandbox.sent(token).filter((s) => s.resolved_chat_id === chat);
const byName = (spans: ReceivedSpan[], name: string) => spans.filter((s) => s.name === name);
const TP = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/;
const ADMIN_TOKEN = 'admin-token-for-the-traces-test-0123';

describe('traces across a poller and a worker process', () => {
  it('each update is ONE trace: ingress batch (poller) → handler run → reply sendMessage and capture delivery (worker); no token, no text', async () => {
    const { token, botId } = newBotToken();
    const secret = token.split(':')[1];
    const w = worker(token, tracingEnv(receiver));
    await workerStarted(w);
    await waitFor(() => w.output().includes('bot handlers ready'), { what: 'getMe answered' });
    const p = poller(token, tracingEnv(receiver));

    const chat = 501;
    const texts = [0, 1, 2].map((i) => `never-in-a-span-${crypto.randomBytes(6).toString('hex')}-${i}`);
    const updates = texts.map((text) => sandbox.injectMessage(token, { chatId: chat, text }) as { update_id: number });
    await waitFor(() => sentTo(token, chat).length === 3, { what: 'three replies sent', timeoutMs: 60_000 });
    await waitFor(() => collector.received.length >= 3, { what: 'three captures delivered' });
    // graceful stops flush what the batch processors still hold
    await Promise.all([stop(p), stop(w)]);

    const spans = receiver.spans;
    const pid = (s: ReceivedSpan) => s.resource['process.pid'];
    for (const u of updates) {
      const ingress = byName(spans, 'ingress.update').find((s) => s.attributes['tg.update_id'] === u.update_id);
      expect(ingress).toBeDefined();
      const traceId = ingress!.traceId;
      const trace = spans.filter((s) => s.traceId === traceId);
      const [batch] = byName(trace, 'ingress.batch');
      expect(batch).toMatchObject({
        parentSpanId: null,
        attributes: expect.objectContaining({
          'messaging.system': 'telegram',
          'messaging.operation.name': 'getUpdates',
          outcome: 'committed',
        }),
      });
      expect(byName(trace, 'getUpdates')[0]).toMatchObject({
        parentSpanId: batch.spanId,
        attributes: expect.objectContaining({ 'http.response.status_code': 200 }),
      });
      const persist = byName(trace, 'ingress.persist')[0];
      expect(persist.parentSpanId).toBe(batch.spanId);
      expect(ingress!.parentSpanId).toBe(persist.spanId);
      // the batch transaction's statements, by the maintained pg instrumentation
      expect(
        trace.some(
          (s) =>
            s.parentSpanId === persist.spanId &&
            (s.attributes['db.system'] ?? s.attributes['db.system.name']) === 'postgresql',
        ),
      ).toBe(true);

      const dispatch = byName(trace, 'dispatch.update').find((s) => s.attributes['tg.update_id'] === u.update_id);
      expect(dispatch).toMatchObject({
        parentSpanId: ingress!.spanId,
        attributes: expect.objectContaining({
          'tg.chat_id': String(chat),
          'messaging.operation.type': 'process',
          outcome: 'handled',
        }),
      });
      const send = byName(trace, 'sendMessage').find(
        (s) => s.attributes['tg.msg_id'] === `update:${botId}:${u.update_id}:1`,
      );
      expect(send).toMatchObject({
        attributes: expect.objectContaining({
          outcome: 'delivered',
          'http.response.status_code': 200,
          'tg.chat_id': String(chat),
        }),
      });
      // the Bot API call inside the attempt, by the maintained http instrumentation, token redacted
      expect(trace.some((s) => s.parentSpanId === send!.spanId && s.kind === 3 /* CLIENT */)).toBe(true);
      expect(byName(trace, 'capture.deliver').filter((s) => s.parentSpanId === ingress!.spanId)).toEqual([
        expect.objectContaining({
          attributes: expect.objectContaining({
            'tg.update_id': u.update_id,
            'tg.chat_id': String(chat),
            outcome: 'delivered',
          }),
        }),
      ]);

      // two processes: the poller's spans and the worker's
      expect(pid(batch)).toBe(p.pid);
      expect(pid(dispatch!)).toBe(w.pid);
      expect(pid(send!)).toBe(w.pid);
      expect(batch.resource['service.instance.id']).not.toBe(send!.resource['service.instance.id']);
      expect(batch.resource['service.name']).toBe('tg-relay-poller');
      expect(send!.resource['service.name']).toBe('tg-relay-worker');
    }
    // stored with the rows (the only way the context crossed processes)
    const inbox = await db.pool.query(`select traceparent from relay.inbox where bot_id = $1`, [botId]);
    expect(inbox.rows.map((r) => r.traceparent)).toEqual([
      expect.stringMatching(TP),
      expect.stringMatching(TP),
      expect.stringMatching(TP),
    ]);
    const outbound = await db.pool.query(`select traceparent from relay.outbound where bot_id = $1`, [botId]);
    expect(outbound.rows.map((r) => r.traceparent)).toEqual([
      expect.stringMatching(TP),
      expect.stringMatching(TP),
      expect.stringMatching(TP),
    ]);

    // nothing exported carries the token or a message text (attributes, names, events, resource)
    const everything = receiver.bodies.join('\n');
    expect(everything.length).toBeGreaterThan(0);
    expect(everything).not.toContain(secret);
    for (const t of texts) expect(everything).not.toContain(t);
    // the Bot API URL is there, redacted
    expect(everything).toContain('/bot<token>/sendMessage');
  });

  it('a message enqueued by POST /v1/messages joins the traceparent given; a malformed one is 400; a malformed row starts a new trace', async () => {
    const { token, botId } = newBotToken();
    const w = worker(token, tracingEnv(receiver));
    await workerStarted(w);
    await waitFor(() => w.output().includes('bot handlers ready'), { what: 'getMe answered' });

    let boss: BossLedger | undefined;
    let app: FastifyInstance | undefined;
    try {
      boss = await startBoss(db.url);
      app = await buildTestApp(db.pool, boss, { config: testConfig({ TELEGRAM_BOT_TOKEN: token }) });
      const auth = { authorization: `Bearer ${OPS_TOKEN}` };
      const traceId = crypto.randomBytes(16).toString('hex');
      const parentId = crypto.randomBytes(8).toString('hex');
      const msg = { msg_id: `traced-${traceId}`, chat_id: 601, text: 'traced over http', bot_id: botId };
      const ok = await call(app, 'POST', '/v1/messages', {
        body: msg,
        headers: { ...auth, traceparent: `00-${traceId}-${parentId}-01` },
      });
      expect(ok.statusCode).toBe(201);

      // a body field too; malformed header or body field: 400 with a code, nothing enqueued
      const viaBody = await call(app, 'POST', '/v1/messages', {
        body: { ...msg, msg_id: `traced-body-${traceId}`, traceparent: `00-${traceId}-${parentId}-01` },
        headers: auth,
      });
      expect(viaBody.statusCode).toBe(201);
      for (const bad of [
        '00-xyz',
        `00-${'0'.repeat(32)}-${parentId}-01`,
        `ff-${traceId}-${parentId}-01`,
        `00-${traceId}-${parentId}-01-extra`,
      ]) {
        const r1 = await call(app, 'POST', '/v1/messages', {
          body: { ...msg, msg_id: 'bad-header' },
          headers: { ...auth, traceparent: bad },
        });
        expect([r1.statusCode, r1.json().code]).toEqual([400, 'RELAY_ADMIN_TRACEPARENT_INVALID']);
        const r2 = await call(app, 'POST', '/v1/messages', {
          body: { ...msg, msg_id: 'bad-body', traceparent: bad },
          headers: auth,
        });
        expect([r2.statusCode, r2.json().code]).toEqual([400, 'RELAY_ADMIN_TRACEPARENT_INVALID']);
      }
      expect(
        (await db.pool.query(`select count(*)::int as n from relay.outbound where msg_id like 'bad-%'`)).rows[0].n,
      ).toBe(0);

      // the SQL function: a traceparent joins, garbage is ignored (a new trace), the old signature still works
      const sqlTrace = crypto.randomBytes(16).toString('hex');
      await db.pool.query(
        `select * from relay.enqueue_outbound('sql-traced-${sqlTrace}', '602', 'via sql', bot_id => $1, traceparent => $2)`,
        [botId, `00-${sqlTrace}-${parentId}-01`],
      );
      await db.pool.query(
        `select * from relay.enqueue_outbound('sql-garbage', '602', 'via sql', bot_id => $1, traceparent => 'garbage')`,
        [botId],
      );
      await db.pool.query(
        `select * from relay.enqueue_outbound('sql-old', '602', 'via sql', 'HTML', false, null, 'message', 'at_least_once', $1)`,
        [botId],
      );

      // an inbox row whose stored traceparent is garbage: handled all the same, in a trace of its own
      const update = sandbox.injectMessage(token, { chatId: 603, text: 'row with a bad traceparent' }) as {
        update_id: number;
      } & Record<string, unknown>;
      await storeUpdates(db.pool, createBoss(db.url, { max: 1 }), [update], botId);
      await db.pool.query(
        `update relay.inbox set traceparent = '00-not-a-trace-context' where bot_id = $1 and update_id = $2`,
        [botId, update.update_id],
      );

      await waitFor(
        () => sentTo(token, 601).length === 2 && sentTo(token, 602).length === 3 && sentTo(token, 603).length === 1,
        {
          what: 'all sent',
          timeoutMs: 60_000,
        },
      );
      await stop(w);

      const sends = byName(receiver.spans, 'sendMessage');
      const http1 = sends.find((s) => s.attributes['tg.msg_id'] === msg.msg_id);
      expect(http1).toMatchObject({ traceId, parentSpanId: parentId });
      expect(sends.find((s) => s.attributes['tg.msg_id'] === `traced-body-${traceId}`)).toMatchObject({
        traceId,
        parentSpanId: parentId,
      });
      expect(sends.find((s) => s.attributes['tg.msg_id'] === `sql-traced-${sqlTrace}`)).toMatchObject({
        traceId: sqlTrace,
        parentSpanId: parentId,
      });
      for (const id of ['sql-garbage', 'sql-old'])
        expect(sends.find((s) => s.attributes['tg.msg_id'] === id)).toMatchObject({ parentSpanId: null });
      const dispatch = byName(receiver.spans, 'dispatch.update').find(
        (s) => s.attributes['tg.update_id'] === update.update_id,
      );
      expect(dispatch).toMatchObject({
        parentSpanId: null,
        attributes: expect.objectContaining({ outcome: 'handled' }),
      });
      // …and its reply joins that new trace
      const reply = sends.find((s) => s.attributes['tg.msg_id'] === `update:${botId}:${update.update_id}:1`);
      expect(reply).toMatchObject({ traceId: dispatch!.traceId, parentSpanId: dispatch!.spanId });
    } finally {
      await app?.close();
      await boss?.stop({ graceful: false, wait: true });
    }
  });

  it('a traced admin process: POST /v1/messages continues the traceparent header (fastify request span → admin.enqueue), a retry is an admin.retry span', async () => {
    const { botId } = newBotToken();
    const port = await freePort();
    const admin = startCli(['admin'], {
      DATABASE_URL: db.url,
      ADMIN_TOKEN,
      ADMIN_PORT: String(port),
      LOG_LEVEL: 'info',
      OTEL_SERVICE_NAME: 'relay-admin-under-test',
      ...tracingEnv(receiver),
    });
    procs.push(admin);
    await waitFor(() => admin.output().includes('admin API listening'), {
      what: 'admin API listening',
      timeoutMs: 30_000,
    });
    const base = `http://127.0.0.1:${port}`;
    const headers = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };
    const traceId = crypto.randomBytes(16).toString('hex');
    const parentId = crypto.randomBytes(8).toString('hex');
    const res = await fetch(`${base}/v1/messages`, {
      method: 'POST',
      headers: { ...headers, traceparent: `00-${traceId}-${parentId}-01` },
      body: JSON.stringify({
        msg_id: `admin-traced-${traceId}`,
        chat_id: 801,
        text: 'secret admin text',
        bot_id: botId,
      }),
    });
    expect(res.status).toBe(201);
    const { id } = (await res.json()) as { id: number };
    const bad = await fetch(`${base}/v1/messages`, {
      method: 'POST',
      headers: { ...headers, traceparent: 'not-a-traceparent' },
      body: JSON.stringify({ msg_id: 'admin-bad', chat_id: 801, text: 'x', bot_id: botId }),
    });
    expect([bad.status, ((await bad.json()) as { code: string }).code]).toEqual([
      400,
      'RELAY_ADMIN_TRACEPARENT_INVALID',
    ]);
    // the stored context: the same trace, the admin's own span as parent
    const stored = (await db.pool.query(`select traceparent from relay.outbound where id = $1`, [id])).rows[0]
      .traceparent as string;
    expect(stored).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    expect(stored).not.toContain(parentId);

    await db.pool.query(`update relay.outbound set state = 'failed', failed_reason = 'test' where id = $1`, [id]);
    const retry = await fetch(`${base}/v1/outbound/${id}/retry`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ reason: 'traced retry' }),
    });
    expect(retry.status).toBe(200);
    await stop(admin);

    const enqueue = byName(receiver.spans, 'admin.enqueue');
    expect(enqueue).toEqual([
      expect.objectContaining({
        traceId,
        attributes: expect.objectContaining({
          'tg.admin.action': 'enqueue',
          'tg.admin.subject_kind': 'outbound',
          outcome: 'ok',
        }),
        resource: expect.objectContaining({ 'service.name': 'relay-admin-under-test', 'process.pid': admin.pid }),
      }),
    ]);
    // under the request span that continued the header's trace (http and/or fastify instrumentation)
    const inTrace = receiver.spans.filter((s) => s.traceId === traceId);
    expect(inTrace.some((s) => s.parentSpanId === parentId)).toBe(true);
    expect(inTrace.some((s) => s.spanId === enqueue[0].parentSpanId)).toBe(true);
    expect(byName(receiver.spans, 'admin.retry')).toEqual([
      expect.objectContaining({ attributes: expect.objectContaining({ 'tg.admin.subject_id': id, outcome: 'ok' }) }),
    ]);
    // probes are not traced; nothing exported holds the admin token or the message text
    const everything = receiver.bodies.join('\n');
    expect(everything).not.toContain(ADMIN_TOKEN);
    expect(everything).not.toContain('secret admin text');
  });

  it('tracing off (OTEL_SDK_DISABLED on the poller, OTEL_TRACES_EXPORTER=none on the worker): the work is done, nothing is exported, no row carries a traceparent', async () => {
    const { token, botId } = newBotToken();
    const off = { ...tracingEnv(receiver), OTEL_SDK_DISABLED: 'true' };
    const w = worker(token, { ...tracingEnv(receiver), OTEL_TRACES_EXPORTER: 'none' });
    await workerStarted(w);
    await waitFor(() => w.output().includes('bot handlers ready'), { what: 'getMe answered' });
    const p = poller(token, off);
    for (const i of [1, 2]) sandbox.injectMessage(token, { chatId: 701, text: `untraced ${i}` });
    await waitFor(() => sentTo(token, 701).length === 2, { what: 'replies sent', timeoutMs: 60_000 });
    await Promise.all([stop(p), stop(w)]);
    expect(receiver.requests).toBe(0);
    const rows = await db.pool.query(
      `select traceparent from relay.inbox where bot_id = $1 union all select traceparent from relay.outbound where bot_id = $1
       union all select c.traceparent from relay.captures c where bot_id = $1`,
      [botId],
    );
    expect(rows.rows.length).toBeGreaterThanOrEqual(4);
    expect(rows.rows.every((r) => r.traceparent === null)).toBe(true);
  });
});
