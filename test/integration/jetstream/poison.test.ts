/**
 * A poison message among valid ones, against the real local NATS server and real PostgreSQL.
 * The in-process tests fetch a backlog from a real durable consumer and hand it to ingestBatch as
 * ONE batch (so the poison certainly shares the transaction with its companions), with the real
 * JsMsg ack/term/nak; the last test runs the `tg-relay jetstream` process on such a backlog.
 * "Nothing is redelivered" is checked by the consumer's counters and by a second fetch that gets
 * nothing back (a nak'ed message would be redelivered after NATS_NAK_BACKOFF).
 */
import { AckPolicy, DeliverPolicy, jetstream, type JsMsg } from '@nats-io/jetstream';
import { seedStreamConfig, toBridgeMessage } from '../../../libs/jetstream/bridge';
import { ingestBatch, type IngestDeps } from '../../../libs/jetstream/ingest';
import { nats } from '../../../libs/jetstream/nats';
import { silentLogger } from '../../../libs/observability/logger';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import {
  bridgeBound,
  killProcess,
  natsScope,
  NatsScope,
  startBridge,
  type BridgeProcess,
} from '../../support/jetstream';

const TOKEN = '6262:jetstream-poison-test-token';
const OPS_CHAT = '-100626';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let scope: NatsScope;
const procs: BridgeProcess[] = [];

beforeAll(async () => {
  db = await createMigratedDatabase('js_poison');
  // a data exception the contract cannot know about (defence in depth): this test database only
  await db.pool.query(`
    create function relay.test_poison_22023() returns trigger language plpgsql as $$
    begin
      if new.msg_id like 'poison-db-%' then
        raise exception 'test: refused by a CHECK-like trigger' using errcode = '22023';
      end if;
      return new;
    end $$;
    create trigger test_poison_22023 before insert on relay.outbound for each row execute function relay.test_poison_22023();`);
});
afterAll(async () => {
  await db.drop();
});
beforeEach(async () => {
  scope = await natsScope('P');
  await db.pool.query('truncate relay.outbound_uploads, relay.outbound, relay.attempts, relay.jetstream_rejects');
  await db.pool.query(`delete from tg_relay_boss.job where name = 'outbound.send'`);
  await scope.jsm.streams.add(seedStreamConfig(scope.stream, scope.subject));
});
afterEach(async () => {
  await Promise.all(procs.splice(0).map((p) => killProcess(p)));
  await scope.cleanup();
});

const enc = new TextEncoder();
/** Publishes raw bytes (bodies that are not valid UTF-8 cannot go through a JS string). */
async function publishRaw(data: Uint8Array | string, msgId: string): Promise<number> {
  const ack = await jetstream(scope.nc).publish(scope.subject, typeof data === 'string' ? enc.encode(data) : data, {
    msgID: msgId,
  });
  return ack.seq;
}

async function addConsumer(): Promise<void> {
  await scope.jsm.consumers.add(scope.stream, {
    durable_name: scope.consumer,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    filter_subject: scope.subject,
    ack_wait: nats.nanos(60_000), // longer than the test: only a nak could bring a message back
    max_deliver: -1,
  });
}

/** Fetches up to `n` messages from the durable consumer (waits at most `expiresMs`). */
async function fetchMessages(n: number, expiresMs: number): Promise<JsMsg[]> {
  const consumer = await jetstream(scope.nc).consumers.get(scope.stream, scope.consumer);
  const out: JsMsg[] = [];
  const it = await consumer.fetch({ max_messages: n, expires: expiresMs });
  for await (const m of it) out.push(m);
  return out;
}

const deps = (): IngestDeps => ({
  pool: db.pool,
  logger: silentLogger(),
  stream: scope.stream,
  alertSubject: scope.alertSubject,
  botId: '6262',
  defaultChatId: OPS_CHAT,
  nakBackoffMs: 50,
});

/** Fetches the whole backlog, ingests it as one batch, and checks that nothing comes back. */
async function ingestBacklogAsOneBatch(expected: number) {
  await addConsumer();
  const msgs: JsMsg[] = [];
  await waitFor(
    async () => {
      msgs.push(...(await fetchMessages(expected - msgs.length, 2_000)));
      return msgs.length === expected;
    },
    { timeoutMs: 30_000, what: 'the whole backlog fetched' },
  );
  const result = await ingestBatch(deps(), msgs.map(toBridgeMessage));
  await scope.nc.flush();
  // a nak'ed message (backoff 50 ms) would be redelivered here
  const again = await fetchMessages(expected, 1_500);
  for (const m of again) m.term();
  await scope.nc.flush();
  const info = await scope.consumerInfo();
  return { result, redelivered: again.length, info };
}

const outboundMsgIds = async () =>
  (await db.pool.query<{ msg_id: string }>('select msg_id from relay.outbound order by id')).rows.map((r) => r.msg_id);
const rejects = async () =>
  (
    await db.pool.query<{
      nats_msg_id: string;
      msg_id: string | null;
      reason: string;
      error: string;
      raw: Buffer;
    }>('select nats_msg_id, msg_id, reason, error, raw from relay.jetstream_rejects order by stream_seq')
  ).rows;

const valid = (i: number) => ({ msg_id: `ok-${i}`, chat_id: 7000 + (i % 3), text: `valid ${i}`, kind: 'trade' });

it('a kind or msg_id with NUL or a lone surrogate, or a body cut inside an emoji, is termed and recorded; its valid companions in the same batch are stored and acked', async () => {
  const emojiCut = enc.encode(
    JSON.stringify({ msg_id: 'cut-', chat_id: 1, text: 'x' }).replace('cut-', 'cut-\u{1F600}'),
  );
  // the msg_id's emoji cut after its first two bytes: the body is not valid UTF-8
  const cutAt = emojiCut.indexOf(0xf0) + 2;
  const cut = new Uint8Array([...emojiCut.subarray(0, cutAt), ...emojiCut.subarray(cutAt + 2)]);
  const poisons: Record<string, string | Uint8Array> = {
    'p-surrogate-msgid': '{"msg_id":"half-\\ud83d","chat_id":1,"text":"secret-poison-a"}',
    'p-nul-msgid': '{"msg_id":"nul-\\u0000-id","chat_id":1,"text":"secret-poison-b"}',
    'p-nul-kind': '{"msg_id":"kind-nul","chat_id":1,"text":"secret-poison-c","kind":"tr\\u0000ade"}',
    'p-surrogate-kind': '{"msg_id":"kind-half","chat_id":1,"text":"secret-poison-d","kind":"\\udc00"}',
    'p-cut-msgid': cut,
    // an over-long msg_id whose 256th character is the first half of an emoji
    'p-long-msgid': JSON.stringify({ msg_id: `${'m'.repeat(255)}\u{1F600}x`, chat_id: 1, text: 'secret-poison-e' }),
  };
  const raws = new Map<string, Uint8Array>();
  let i = 0;
  for (; i < 3; i++) await publishRaw(JSON.stringify(valid(i)), `ok-${i}`);
  for (const [id, body] of Object.entries(poisons)) {
    await publishRaw(body, id);
    raws.set(id, typeof body === 'string' ? enc.encode(body) : body);
    await publishRaw(JSON.stringify(valid(i)), `ok-${i}`);
    i++;
  }
  const total = i + raws.size;

  const { result, redelivered, info } = await ingestBacklogAsOneBatch(total);

  expect(result).toMatchObject({ created: i, rejected: raws.size, naked: 0 });
  expect(result.error).toBeUndefined();
  expect(await outboundMsgIds()).toEqual(expect.arrayContaining(Array.from({ length: i }, (_, k) => `ok-${k}`)));
  expect(await outboundMsgIds()).toHaveLength(i);
  const rows = await rejects();
  expect(rows.map((r) => r.nats_msg_id).sort()).toEqual([...raws.keys()].sort());
  const by = (id: string) => rows.find((r) => r.nats_msg_id === id)!;
  // the body exactly as received; the msg_id column only as text can hold it
  for (const [id, raw] of raws) expect(Buffer.compare(by(id).raw, Buffer.from(raw))).toBe(0);
  expect(by('p-surrogate-msgid')).toMatchObject({ reason: 'invalid', msg_id: 'half-\uFFFD' });
  expect(by('p-surrogate-msgid').error).toMatch(/msg_id: contains a lone surrogate/);
  expect(by('p-nul-msgid')).toMatchObject({ reason: 'invalid', msg_id: 'nul-\uFFFD-id' });
  expect(by('p-nul-msgid').error).toMatch(/msg_id: contains a NUL character/);
  expect(by('p-nul-kind')).toMatchObject({ reason: 'invalid', msg_id: 'kind-nul' });
  expect(by('p-nul-kind').error).toMatch(/kind: contains a NUL character/);
  expect(by('p-surrogate-kind').error).toMatch(/kind: contains a lone surrogate/);
  expect(by('p-cut-msgid')).toMatchObject({ reason: 'invalid_json', msg_id: null });
  expect(by('p-cut-msgid').error).toMatch(/not valid UTF-8/);
  expect(by('p-long-msgid').msg_id).toBe('m'.repeat(255));
  for (const r of rows) expect(r.error).not.toMatch(/secret-poison/);

  // acked or termed, every one: nothing pending, nothing redelivered
  expect(redelivered).toBe(0);
  expect(info).toMatchObject({ num_pending: 0, num_ack_pending: 0, num_redelivered: 0 });
});

it('a data exception (SQLSTATE class 22) the contract does not catch: the batch is split, only the offending messages are termed and recorded, the companions are stored and acked', async () => {
  const order = ['ok-0', 'ok-1', 'poison-db-1', 'ok-2', 'ok-3', 'ok-4', 'poison-db-2', 'ok-5', 'ok-6'];
  for (const [n, id] of order.entries())
    await publishRaw(JSON.stringify({ msg_id: id, chat_id: 7000 + (n % 2), text: `text of ${id}`, kind: 'k' }), id);

  const { result, redelivered, info } = await ingestBacklogAsOneBatch(order.length);

  expect(result).toMatchObject({ created: 7, rejected: 2, naked: 0 });
  expect(result.error).toBeUndefined();
  // stored in stream order per chat (the split keeps the halves in order)
  const ids = await outboundMsgIds();
  expect(ids.filter((id) => ['ok-0', 'ok-2', 'ok-4', 'ok-6'].includes(id))).toEqual(['ok-0', 'ok-2', 'ok-4', 'ok-6']);
  expect([...ids].sort()).toEqual(order.filter((id) => id.startsWith('ok-')).sort());
  const rows = await rejects();
  expect(rows.map((r) => [r.nats_msg_id, r.msg_id, r.reason])).toEqual([
    ['poison-db-1', 'poison-db-1', 'invalid'],
    ['poison-db-2', 'poison-db-2', 'invalid'],
  ]);
  for (const r of rows) expect(r.error).toMatch(/SQLSTATE 22023/);
  // one pg-boss job per stored message, none for the refused ones
  const jobs = await db.pool.query(
    `select data->>'msgId' as m from tg_relay_boss.job where name = 'outbound.send' order by 1`,
  );
  expect(jobs.rows.map((r) => r.m)).toEqual([...ids].sort());
  expect(redelivered).toBe(0);
  expect(info).toMatchObject({ num_pending: 0, num_ack_pending: 0, num_redelivered: 0 });
});

it('tg-relay jetstream on a backlog with poison messages: the valid ones are enqueued, the poison ones recorded, nothing is redelivered, no content is logged', async () => {
  const N = 40;
  const poisonAt = new Map<number, string>([
    [5, '{"msg_id":"half-\\ud83d","chat_id":1,"text":"secret-poison-x"}'],
    [17, '{"msg_id":"k","chat_id":1,"text":"secret-poison-y","kind":"a\\u0000b"}'],
    [29, JSON.stringify({ msg_id: 'poison-db-3', chat_id: 1, text: 'secret-poison-z' })],
  ]);
  for (let n = 0; n < N; n++)
    await publishRaw(poisonAt.get(n) ?? JSON.stringify(valid(n)), poisonAt.has(n) ? `poison-${n}` : `ok-${n}`);
  const b = startBridge(scope, {
    DATABASE_URL: db.url,
    TELEGRAM_BOT_TOKEN: TOKEN,
    OPS_CHAT_ID: OPS_CHAT,
    NATS_BATCH: '100',
    NATS_ACK_WAIT: '60s',
  });
  procs.push(b);
  await bridgeBound(b);
  await waitFor(
    async () => (await outboundMsgIds()).length === N - poisonAt.size && (await rejects()).length === poisonAt.size,
    { timeoutMs: 30_000, what: 'valid messages enqueued and poison ones recorded' },
  );
  await waitFor(
    async () => {
      const i = await scope.consumerInfo();
      return i.num_pending === 0 && i.num_ack_pending === 0;
    },
    { timeoutMs: 20_000, what: 'every message acked or termed' },
  );
  expect((await scope.consumerInfo()).num_redelivered).toBe(0);
  expect((await rejects()).map((r) => r.nats_msg_id)).toEqual(['poison-5', 'poison-17', 'poison-29']);
  expect(b.output()).toContain('jetstream message refused');
  expect(b.output()).not.toContain('secret-poison');
  expect(b.output()).not.toContain('jetstream batch not committed');
});
