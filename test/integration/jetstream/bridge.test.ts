/**
 * `tg-relay jetstream` against the real local NATS server (each test its own stream, subjects and
 * consumer) and real PostgreSQL, with real `tg-relay worker` processes sending to the sandbox Bot API.
 */
import { itemList } from '../../../libs/admin/queries';
import { createBotApiSandbox, type BotApiSandbox } from '../../../libs/sandbox';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import { startWorkerProcess, workerStarted, WorkerProcess } from '../../support/worker-process';
import { seedStreamConfig } from '../../../libs/jetstream/bridge';
import {
  BridgeProcess,
  bridgeBound,
  killProcess,
  natsScope,
  NatsScope,
  readiness,
  startBridge,
  startTcpProxy,
} from '../../support/jetstream';

const TOKEN = '6161:jetstream-test-token-not-a-secret';
const OPS_CHAT = '-100616';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let sb: BotApiSandbox;
let scope: NatsScope;
const procs: (BridgeProcess | WorkerProcess)[] = [];
const proxies: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  db = await createMigratedDatabase('js_bridge');
  sb = createBotApiSandbox({
    seed: 7,
    limits: {
      perBot: { count: 1000, windowMs: 1000 },
      privateChat: { count: 1000, windowMs: 1000 },
      groupChat: { count: 1000, windowMs: 1000 },
    },
  });
  await sb.start();
});
afterAll(async () => {
  await sb.stop();
  await db.drop();
});
beforeEach(async () => {
  scope = await natsScope();
  await db.pool.query(
    'truncate relay.outbound_uploads, relay.outbound, relay.attempts, relay.jetstream_rejects, relay.jetstream_alert_cursor',
  );
  sb.reset();
});
afterEach(async () => {
  await Promise.all(procs.splice(0).map((p) => killProcess(p)));
  await Promise.all(proxies.splice(0).map((p) => p.close()));
  await scope.cleanup();
});

const bridgeEnv = (extra: Record<string, string> = {}) => ({
  DATABASE_URL: db.url,
  TELEGRAM_BOT_TOKEN: TOKEN,
  OPS_CHAT_ID: OPS_CHAT,
  ...extra,
});
const bridge = (extra: Record<string, string> = {}) => {
  const p = startBridge(scope, bridgeEnv(extra));
  procs.push(p);
  return p;
};
const worker = () => {
  const w = startWorkerProcess({
    DATABASE_URL: db.url,
    TELEGRAM_BOT_TOKEN: TOKEN,
    TELEGRAM_API_ROOT: sb.url,
    OPS_CHAT_ID: OPS_CHAT,
    OUTBOUND_RATE_PER_BOT: '1000/1s',
    OUTBOUND_RATE_PER_CHAT: '1000/1s',
    OUTBOUND_RATE_PER_GROUP: '1000/1s',
    RETRY_BASE: '50ms',
  });
  procs.push(w);
  return w;
};
const count = async (sql: string, values: unknown[] = []) => Number((await db.pool.query(sql, values)).rows[0].n);
const outboundRows = () => count('select count(*) as n from relay.outbound');

it('publish → delivered exactly once per msg_id: default chat, parse_mode verbatim, publisher kind on the row and in the admin API; republishes are no-ops', async () => {
  const w = worker();
  await workerStarted(w);
  const b = bridge();
  await bridgeBound(b);

  const N = 30;
  for (let i = 0; i < N; i++) {
    const msg: Record<string, unknown> = {
      msg_id: `deliver-${i}`,
      text: `<b>m ${i}</b>`,
      parse_mode: 'HTML',
      kind: i % 2 ? 'trade' : 'info',
    };
    if (i % 3) msg.chat_id = i % 3 === 1 ? 7001 : '7002';
    if (i === 3) msg.chat = null; // the seed's field name, null → default chat
    await scope.publish(msg, msg.msg_id as string);
  }
  // republished: within the stream's window by Nats-Msg-Id, and past it (another Nats-Msg-Id, same payload)
  expect(
    (
      await scope.publish(
        { msg_id: 'deliver-1', chat_id: 7001, text: '<b>m 1</b>', parse_mode: 'HTML', kind: 'trade' },
        'deliver-1',
      )
    ).duplicate,
  ).toBe(true);
  await scope.publish(
    { msg_id: 'deliver-2', chat_id: '7002', text: '<b>m 2</b>', parse_mode: 'HTML', kind: 'info' },
    'deliver-2-republished',
  );
  await scope.publish({ msg_id: 'deliver-4', chat_id: 7001, text: '<b>m 4</b>', parse_mode: 'HTML', kind: 'info' });

  await waitFor(async () => (await count(`select count(*) as n from relay.outbound where state = 'delivered'`)) === N, {
    timeoutMs: 30_000,
    what: 'all delivered',
  });
  await waitFor(
    async () => (await scope.consumerInfo()).num_ack_pending === 0 && (await scope.consumerInfo()).num_pending === 0,
    { what: 'stream drained' },
  );

  const sent = sb.sent(TOKEN);
  const texts = sent.map((m) => m.text);
  for (let i = 0; i < N; i++) expect(texts.filter((t) => t === `<b>m ${i}</b>`)).toHaveLength(1); // verbatim, once each
  expect(sent).toHaveLength(N);
  expect(sent.every((m) => m.parse_mode === 'HTML')).toBe(true);
  const rows = (
    await db.pool.query('select msg_id, chat_id, parse_mode, kind, publisher_kind from relay.outbound order by id')
  ).rows;
  expect(rows).toHaveLength(N);
  expect(rows.find((r) => r.msg_id === 'deliver-0')).toMatchObject({
    chat_id: OPS_CHAT,
    parse_mode: 'HTML',
    kind: 'message',
    publisher_kind: 'info',
  });
  expect(rows.find((r) => r.msg_id === 'deliver-3')).toMatchObject({ chat_id: OPS_CHAT, publisher_kind: 'trade' });
  expect(rows.find((r) => r.msg_id === 'deliver-1')).toMatchObject({ chat_id: '7001', publisher_kind: 'trade' });
  expect(await count('select count(*) as n from relay.jetstream_rejects')).toBe(0);
  // exactly one pg-boss job per row: nothing enqueued twice
  expect(
    await count(
      `select count(*) as n from tg_relay_boss.job where name = 'outbound.send' and data->>'msgId' like 'deliver-%'`,
    ),
  ).toBe(N);

  const page = await itemList(db.pool, 'outbound', {}, { limit: 100 });
  expect(page.items.find((r) => r.msg_id === 'deliver-1')).toMatchObject({ publisher_kind: 'trade' });
});

it('invalid messages are termed with a recorded reason; a msg_id republished with another payload is recorded as a conflict and acked', async () => {
  await db.pool.query(
    `insert into relay.outbound_settings (singleton, bot_id, default_chat_id) values (true, '6161', $1) on conflict (singleton) do nothing`,
    [OPS_CHAT],
  );
  const b = bridge();
  await bridgeBound(b);
  await scope.publish({ msg_id: 'ok-1', chat_id: 42, text: 'fine' }, 'ok-1');
  await scope.publish('{not json', 'bad-json');
  await scope.publish([1, 2], 'bad-array');
  await scope.publish({ msg_id: 'no-text', chat_id: 42 }, 'no-text');
  await scope.publish({ msg_id: 'too-long', chat_id: 42, text: 'x'.repeat(4097) }, 'too-long');
  await scope.publish({ msg_id: 'bad-chat', chat_id: 'not a chat', text: 'secret-text-bad-chat' }, 'bad-chat');
  await scope.publish({ msg_id: 'bad-mode', chat_id: 42, text: 'y', parse_mode: 'RTF' }, 'bad-mode');
  await scope.publish({ msg_id: 'two-chats', chat_id: 1, chat: '2', text: 'y' }, 'two-chats');
  await scope.publish({ msg_id: 'ok-1', chat_id: 42, text: 'secret-text-changed' }, 'ok-1-again'); // conflict
  await scope.publish({ msg_id: 'ok-2', chat_id: 42, text: 'fine too', kind: 'k'.repeat(65) }, 'ok-2'); // publisher kind too long
  await scope.publish({ msg_id: 'ok-3', chat_id: 42, text: 'last one' }, 'ok-3');

  await waitFor(
    async () =>
      (await count('select count(*) as n from relay.jetstream_rejects')) === 9 && (await outboundRows()) === 2,
    {
      what: 'rejects recorded',
    },
  );
  await waitFor(
    async () => {
      const i = await scope.consumerInfo();
      return i.num_pending === 0 && i.num_ack_pending === 0;
    },
    { what: 'every message acked or termed (none left to redeliver)' },
  );

  const rejects = (
    await db.pool.query(
      'select nats_msg_id, msg_id, reason, error, outbound_id, octet_length(raw) as size from relay.jetstream_rejects order by stream_seq',
    )
  ).rows;
  const by = (id: string) => rejects.find((r) => r.nats_msg_id === id);
  expect(by('bad-json')).toMatchObject({ reason: 'invalid_json', msg_id: null });
  expect(by('bad-array')).toMatchObject({ reason: 'invalid' });
  expect(by('no-text').error).toMatch(/^text: /);
  expect(by('too-long').error).toMatch(/text: must be 1\.\.4096 characters, got 4097/);
  expect(by('bad-chat')).toMatchObject({ reason: 'invalid', msg_id: 'bad-chat' });
  expect(by('bad-mode').error).toMatch(/parse_mode/);
  expect(by('two-chats').error).toMatch(/chat and chat_id/);
  expect(by('ok-2').error).toMatch(/kind: must be a string of at most 64/);
  const okId = (await db.pool.query(`select id::text from relay.outbound where msg_id = 'ok-1'`)).rows[0].id;
  expect(by('ok-1-again')).toMatchObject({ reason: 'conflict', msg_id: 'ok-1', outbound_id: okId });
  // the existing message is untouched and its history shows the conflict
  expect((await db.pool.query(`select text from relay.outbound where msg_id = 'ok-1'`)).rows[0].text).toBe('fine');
  expect(
    await count(
      `select count(*) as n from relay.attempts where subject = 'outbound' and subject_id = $1 and outcome = 'conflict'`,
      [okId],
    ),
  ).toBe(1);
  // reasons are logged; message text is not
  expect(b.output()).toContain('jetstream message refused');
  expect(b.output()).not.toContain('secret-text');
});

it('SIGKILL of the bridge mid-stream loses nothing and enqueues nothing twice', async () => {
  const N = 2000;
  await scope.jsm.streams.add(seedStreamConfig(scope.stream, scope.subject));
  for (let from = 0; from < N; from += 100) {
    await Promise.all(
      Array.from({ length: 100 }, (_, k) => from + k).map((i) =>
        scope.publish({ msg_id: `kill-${i}`, chat_id: 8000 + (i % 20), text: `k ${i}` }, `kill-${i}`),
      ),
    );
  }
  const first = bridge({ NATS_BATCH: '10', NATS_ACK_WAIT: '2s' }); // creates the consumer: its in-flight messages come back after 2 s
  await bridgeBound(first);
  await waitFor(async () => (await outboundRows()) >= 100, {
    timeoutMs: 30_000,
    intervalMs: 5,
    what: 'some rows committed',
  });
  first.kill('SIGKILL');
  await killProcess(first);
  const before = await outboundRows();
  expect(before).toBeLessThan(N); // killed mid-stream

  const second = bridge({ NATS_BATCH: '20', NATS_ACK_WAIT: '2s' });
  await bridgeBound(second);
  await waitFor(async () => (await outboundRows()) === N, { timeoutMs: 45_000, what: 'every message enqueued' });
  await waitFor(
    async () => {
      const i = await scope.consumerInfo();
      return i.num_pending === 0 && i.num_ack_pending === 0;
    },
    { timeoutMs: 20_000, what: 'stream drained' },
  );
  expect(await count(`select count(distinct msg_id) as n from relay.outbound where msg_id like 'kill-%'`)).toBe(N);
  expect(
    await count(
      `select count(*) as n from tg_relay_boss.job where name = 'outbound.send' and data->>'msgId' like 'kill-%'`,
    ),
  ).toBe(N);
  expect(await count('select count(*) as n from relay.jetstream_rejects')).toBe(0);
});

it('database down: messages stay in the stream (naked, not acked) and are enqueued once it is back', async () => {
  const u = new URL(db.url);
  const pgProxy = await startTcpProxy({ host: u.hostname, port: Number(u.port || 5432) });
  proxies.push(pgProxy);
  const viaProxy = new URL(db.url);
  viaProxy.port = String(pgProxy.port);
  const b = bridge({ DATABASE_URL: viaProxy.toString() });
  const port = await bridgeBound(b);
  await scope.publish({ msg_id: 'db-0', chat_id: 9, text: 'before' }, 'db-0');
  await waitFor(async () => (await outboundRows()) === 1, { what: 'first message' });

  await pgProxy.cut();
  for (let i = 1; i <= 10; i++) await scope.publish({ msg_id: `db-${i}`, chat_id: 9, text: `during ${i}` }, `db-${i}`);
  await waitFor(async () => (await readiness(port)).status === 503, {
    what: 'not ready while the database is unreachable',
  });
  const r = await readiness(port);
  expect(r.body).toMatchObject({ ready: false, database: 'error', bound: true });
  await waitFor(async () => (await scope.consumerInfo()).num_redelivered > 0, { what: 'naked messages redelivered' });
  const info = await scope.consumerInfo();
  expect(info.num_pending + info.num_ack_pending).toBe(10); // still in the stream, none acked
  expect(await outboundRows()).toBe(1);

  await pgProxy.restore();
  await waitFor(async () => (await outboundRows()) === 11, {
    timeoutMs: 30_000,
    what: 'enqueued after the database came back',
  });
  await waitFor(async () => (await readiness(port)).status === 200, { what: 'ready again' });
  expect(
    await count(
      `select count(*) as n from tg_relay_boss.job where name = 'outbound.send' and data->>'msgId' like 'db-%'`,
    ),
  ).toBe(11);
});

it('reconnects after the NATS connection is cut (TCP proxy), and rebinds after its consumer and its stream are deleted', async () => {
  const natsProxy = await startTcpProxy({ host: '127.0.0.1', port: 4222 });
  proxies.push(natsProxy);
  const b = bridge({ NATS_URL: `nats://127.0.0.1:${natsProxy.port}` });
  const port = await bridgeBound(b);
  await scope.publish({ msg_id: 'rc-1', chat_id: 9, text: 'a' });
  await waitFor(async () => (await outboundRows()) === 1, { what: 'first message' });

  await natsProxy.cut();
  await waitFor(async () => (await readiness(port)).status === 503, { what: 'not ready while NATS is unreachable' });
  await scope.publish({ msg_id: 'rc-2', chat_id: 9, text: 'b' });
  await natsProxy.restore();
  await waitFor(async () => (await outboundRows()) === 2, { timeoutMs: 30_000, what: 'message after reconnect' });
  await waitFor(async () => (await readiness(port)).status === 200, { what: 'ready after reconnect' });

  await scope.jsm.consumers.delete(scope.stream, scope.consumer);
  await scope.publish({ msg_id: 'rc-3', chat_id: 9, text: 'c' });
  await waitFor(async () => (await outboundRows()) === 3, {
    timeoutMs: 30_000,
    what: 'message after the consumer was deleted',
  });

  await scope.jsm.streams.delete(scope.stream);
  // the bridge recreates the stream with the seed's settings; publish once it exists again
  const info = await waitFor(() => scope.jsm.streams.info(scope.stream).catch(() => undefined), {
    timeoutMs: 30_000,
    what: 'stream recreated',
  });
  expect(info.config.subjects).toEqual([scope.subject]);
  expect(Number(info.config.max_age)).toBe(24 * 3600 * 1e9);
  expect(Number(info.config.duplicate_window)).toBe(5 * 60 * 1e9);
  await scope.publish({ msg_id: 'rc-4', chat_id: 9, text: 'd' });
  await waitFor(async () => (await outboundRows()) === 4, {
    timeoutMs: 30_000,
    what: 'message after the stream was deleted',
  });
  expect(b.exitCode).toBeNull();
  expect((await db.pool.query('select msg_id from relay.outbound order by id')).rows.map((r) => r.msg_id)).toEqual([
    'rc-1',
    'rc-2',
    'rc-3',
    'rc-4',
  ]);
});

it('binds to an existing stream without changing it', async () => {
  await scope.jsm.streams.add({
    name: scope.stream,
    subjects: [scope.subject, 'tgrtest.other.>'],
    max_age: 3600 * 1e9,
    duplicate_window: 60 * 1e9,
  });
  const b = bridge();
  await bridgeBound(b);
  await scope.publish({ msg_id: 'ex-1', chat_id: 9, text: 'a' });
  await waitFor(async () => (await outboundRows()) === 1, { what: 'message' });
  const info = await scope.jsm.streams.info(scope.stream);
  expect(info.config.subjects).toEqual([scope.subject, 'tgrtest.other.>']);
  expect(Number(info.config.max_age)).toBe(3600 * 1e9);
  expect(Number(info.config.duplicate_window)).toBe(60 * 1e9);
});

it('a 403 to a chat: the message fails, operators get one Telegram alert and one alert JSON on the alert subject; the alert does not come back in (loop guard)', async () => {
  // the consumed subject is a wildcard that also covers the alert subject: the alert reaches the bridge
  const wide = { ...scope, subject: scope.subject.replace(/\.outbound$/, '.>') };
  const alerts: Array<{ json: { failed: { reason: string } }; alertHeader: string | undefined }> = [];
  const sub = scope.nc.subscribe(scope.alertSubject, {
    callback: (_e, m) =>
      void alerts.push({
        json: m.json<{ failed: { reason: string } }>(),
        alertHeader: m.headers?.get('Tg-Relay-Alert'),
      }),
  });
  // a 403 that says nothing lasting about the chat (a blocked user would raise no alert: relay.chat_status)
  sb.scriptChatError(TOKEN, 4343, {
    kind: 'custom',
    error_code: 403,
    description: "Forbidden: bot can't initiate conversation with a user",
  });
  const w = worker();
  await workerStarted(w);
  const b = startBridge(wide, bridgeEnv());
  procs.push(b);
  const port = await bridgeBound(b);

  await scope.publish({ msg_id: 'blocked-1', chat_id: 4343, text: 'to a chat that blocked the bot', kind: 'trade' });
  await waitFor(
    async () =>
      (await count(`select count(*) as n from relay.outbound where msg_id = 'blocked-1' and state = 'failed'`)) === 1,
    {
      timeoutMs: 30_000,
      what: 'failed',
    },
  );
  await waitFor(() => alerts.length >= 1, { timeoutMs: 30_000, what: 'alert on NATS' });
  await waitFor(() => sb.sent(TOKEN).some((m) => String(m.chat_id) === OPS_CHAT), {
    timeoutMs: 30_000,
    what: 'Telegram alert',
  });
  // the published alert went through the stream to the bridge, which skipped it
  await waitFor(async () => (await readiness(port)).body.stats.skipped >= 1, {
    timeoutMs: 20_000,
    what: 'alert skipped by the bridge',
  });
  sub.unsubscribe();

  expect(alerts).toHaveLength(1);
  expect(alerts[0].alertHeader).toBe('1');
  expect(alerts[0].json).toMatchObject({
    msg_id: 'alert:blocked-1',
    kind: 'alert',
    failed: { msg_id: 'blocked-1', chat_id: '4343', publisher_kind: 'trade', last_status: 403 },
  });
  expect(alerts[0].json.failed.reason).toMatch(/Forbidden: bot can't initiate conversation with a user/);
  expect(JSON.stringify(alerts[0].json)).not.toContain('to a chat that blocked the bot');
  const toOps = sb.sent(TOKEN).filter((m) => String(m.chat_id) === OPS_CHAT);
  expect(toOps).toHaveLength(1);
  expect(toOps[0].text).toContain('blocked-1');
  expect(await count(`select count(*) as n from relay.outbound where kind = 'alert'`)).toBe(1);
  expect(await count(`select count(*) as n from relay.outbound where msg_id like 'alert:alert:%'`)).toBe(0);
  expect(await count('select count(*) as n from relay.jetstream_rejects')).toBe(0);
});

it('META_ALERT_ON_DROP=false: no Telegram alert and nothing on the alert subject', async () => {
  const alerts: unknown[] = [];
  const sub = scope.nc.subscribe(scope.alertSubject, { callback: () => void alerts.push(1) });
  sb.scriptChatError(TOKEN, 4444, 'blocked');
  const w = startWorkerProcess({
    DATABASE_URL: db.url,
    TELEGRAM_BOT_TOKEN: TOKEN,
    TELEGRAM_API_ROOT: sb.url,
    OPS_CHAT_ID: OPS_CHAT,
    META_ALERT_ON_DROP: 'false',
  });
  procs.push(w);
  await workerStarted(w);
  const b = bridge({ META_ALERT_ON_DROP: 'false' });
  await bridgeBound(b);
  await scope.publish({ msg_id: 'quiet-1', chat_id: 4444, text: 'x' });
  await scope.publish({ msg_id: 'quiet-2', chat_id: 4445, text: 'after' });
  await waitFor(
    async () =>
      (await count(`select count(*) as n from relay.outbound where msg_id = 'quiet-1' and state = 'failed'`)) === 1,
    {
      timeoutMs: 30_000,
      what: 'failed',
    },
  );
  await waitFor(
    async () =>
      (await count(`select count(*) as n from relay.outbound where msg_id = 'quiet-2' and state = 'delivered'`)) === 1,
    {
      timeoutMs: 30_000,
      what: 'next delivered',
    },
  );
  await scope.nc.flush();
  sub.unsubscribe();
  expect(await count(`select count(*) as n from relay.outbound where kind = 'alert'`)).toBe(0);
  expect(alerts).toHaveLength(0);
});

it('starts while NATS is unreachable: stays up, not ready, binds once NATS is there; never prints the NATS password', async () => {
  const natsProxy = await startTcpProxy({ host: '127.0.0.1', port: 4222 });
  proxies.push(natsProxy);
  await natsProxy.cut();
  const b = bridge({ NATS_URL: `nats://relay:pw-not-to-be-logged@127.0.0.1:${natsProxy.port}` });
  const port = await waitFor(
    () => {
      const line = b
        .output()
        .split('\n')
        .find((l) => l.includes('"jetstream bridge started"'));
      return line ? (JSON.parse(line).healthPort as number) : undefined;
    },
    { what: 'health server up' },
  );
  await waitFor(() => b.output().includes('jetstream bridge not bound: retrying'), { what: 'a failed bind logged' });
  const r = await readiness(port);
  expect(r.status).toBe(503);
  expect(r.body).toMatchObject({ ready: false, bound: false, connected: false });
  expect(b.exitCode).toBeNull();

  await natsProxy.restore();
  await bridgeBound(b, 30_000);
  await scope.publish({ msg_id: 'late-1', chat_id: 9, text: 'a' });
  await waitFor(async () => (await outboundRows()) === 1, { what: 'message after NATS came up' });
  expect(b.output()).not.toContain('pw-not-to-be-logged');
});

it('a published sendPhoto is stored with its method and params; an upload is a contract violation recorded as a reject', async () => {
  const b = bridge();
  await bridgeBound(b);
  const params = { photo: 'https://example.com/chart.png', caption: 'today' };
  await scope.publish({ msg_id: 'js-photo', chat_id: 7001, method: 'sendPhoto', params, kind: 'chart' }, 'js-photo');
  await scope.publish(
    { msg_id: 'js-upload', chat_id: 7001, method: 'sendPhoto', params: { photo: 'attach://chart' } },
    'js-upload',
  );
  await waitFor(
    async () =>
      (await outboundRows()) === 1 && (await count('select count(*) as n from relay.jetstream_rejects')) === 1,
    { what: 'the photo stored and the upload refused' },
  );
  const row = (
    await db.pool.query(
      `select method, params, text, chat_id, publisher_kind from relay.outbound where msg_id = 'js-photo'`,
    )
  ).rows[0];
  expect(row).toEqual({ method: 'sendPhoto', params, text: null, chat_id: '7001', publisher_kind: 'chart' });
  const rej = (await db.pool.query('select msg_id, reason, error from relay.jetstream_rejects')).rows[0];
  expect(rej).toMatchObject({ msg_id: 'js-upload', reason: 'invalid', error: expect.stringMatching(/attach:\/\//) });
});
