/**
 * Enqueueing relayed Bot API calls other than sendMessage (sql/0025_relayed_methods.sql): the row
 * names its method and params, answers belong to no chat, inline edits are keyed by their inline
 * message, uploads are stored with the row; the SQL function takes the same calls and enforces the
 * same core rules; sendMessage rows and the old calls are what they were.
 */
import type { BossLedger } from '../../../libs/db/boss';
import { createBoss, withTransaction } from '../../../libs/db';
import {
  enqueueOutbound,
  enqueueOutboundBatch,
  OutboundConflictError,
  OutboundValidationError,
  outboundSettingsSave,
  type OutboundMessageInput,
  createOutboundReplyWriter,
  validateOutboundReply,
} from '../../../libs/outbound';
import type { OutboundReply } from '../../../libs/dispatch/reply-sink';
import { RELAYED_METHODS } from '../../../libs/telegram/methods';
import { newPlaceholder } from '../../../libs/telegram/placeholders';
import { createMigratedDatabase } from '../../support/db';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let boss: BossLedger;
const BOT = '1000000001';
const defaults = { botId: BOT, defaultChatId: '-100777' };

beforeAll(async () => {
  db = await createMigratedDatabase('ob_methods');
  boss = createBoss(db.url, { max: 1 });
  await outboundSettingsSave(db.pool, { botId: BOT, defaultChatId: '-100777' });
});
afterAll(async () => {
  await boss.stop({ graceful: false, wait: true }).catch(() => undefined);
  await db.drop();
});

const rowOf = async (msgId: string) =>
  (await db.pool.query('select * from relay.outbound where msg_id = $1', [msgId])).rows[0];
const enqueue = (msg: OutboundMessageInput) => withTransaction(db.pool, (c) => enqueueOutbound(c, boss, msg, defaults));

it("relay.outbound_upsert's relayed method list is libs/telegram/methods.ts's", async () => {
  const { rows } = await db.pool.query<{ def: string }>(
    `select pg_get_functiondef(p.oid) as def from pg_proc p
      where p.pronamespace = 'relay'::regnamespace and p.proname = 'outbound_upsert'`,
  );
  expect(rows).toHaveLength(1); // the old signature is gone: no ambiguous overload
  const list = /v_method = any \(array\[([^\]]*)\]\)/.exec(rows[0].def)?.[1] ?? '';
  const inSql = [...list.matchAll(/'([A-Za-z]+)'/g)].map((m) => m[1]);
  expect(inSql).toEqual([...RELAYED_METHODS]);
});

describe('the library', () => {
  it('stores a sendPhoto with its params, its upload and no sendMessage fields', async () => {
    const bytes = Buffer.from([0, 1, 2, 250, 255, 0x0d, 0x0a]);
    const ph = newPlaceholder();
    const r = await enqueue({
      msg_id: 'photo-1',
      chat_id: 42,
      method: 'sendPhoto',
      params: { photo: 'attach://photo', caption: 'a cat' },
      uploads: [{ part: 'photo', filename: 'cat.jpg', bytes }],
      placeholders: [ph],
    });
    expect(r).toMatchObject({ created: true, targetChatId: '42' });
    const row = await rowOf('photo-1');
    expect(row).toMatchObject({
      method: 'sendPhoto',
      params: { photo: 'attach://photo', caption: 'a cat' },
      text: null,
      parse_mode: null,
      message_count: 1,
      placeholders: [String(ph)],
      chat_id: '42',
    });
    const up = await db.pool.query('select part, filename, bytes from relay.outbound_uploads where outbound_id = $1', [
      row.id,
    ]);
    expect(up.rows).toEqual([{ part: 'photo', filename: 'cat.jpg', bytes }]);
    // same call again: the same row, no second copy of the file
    expect(
      await enqueue({
        msg_id: 'photo-1',
        chat_id: 42,
        method: 'sendPhoto',
        params: { caption: 'a cat', photo: 'attach://photo' },
        uploads: [{ part: 'photo', filename: 'cat.jpg', bytes }],
      }),
    ).toMatchObject({ id: r.id, created: false });
    expect(
      (await db.pool.query('select count(*)::int as n from relay.outbound_uploads where outbound_id = $1', [row.id]))
        .rows[0].n,
    ).toBe(1);
    await expect(
      enqueue({ msg_id: 'photo-1', chat_id: 42, method: 'sendPhoto', params: { photo: 'https://x/y.jpg' } }),
    ).rejects.toBeInstanceOf(OutboundConflictError);
  });

  it('counts an album as its messages and an answer as none, in no chat', async () => {
    await enqueue({
      msg_id: 'album-1',
      chat_id: 42,
      method: 'sendMediaGroup',
      params: { media: [1, 2, 3].map((i) => ({ type: 'photo', media: `https://x/${i}.jpg` })) },
    });
    expect(await rowOf('album-1')).toMatchObject({ message_count: 3 });
    const a = await enqueue({
      msg_id: 'answer-1',
      chat_id: 42,
      method: 'answerCallbackQuery',
      params: { callback_query_id: 'q1', text: 'ok' },
    });
    expect(a.targetChatId).toBeNull();
    expect(await rowOf('answer-1')).toMatchObject({ chat_id: null, target_chat_id: null, message_count: 0 });
  });

  it('keys an edit of an inline message by the inline message, sent to no chat', async () => {
    const r = await enqueue({
      msg_id: 'inline-1',
      method: 'editMessageText',
      params: { inline_message_id: 'AAQ-1', text: 'edited' },
    });
    expect(r.targetChatId).toBe('inline:AAQ-1');
  });

  it('refuses what can never be sent, naming every field (RELAY_OUTBOUND_INVALID)', async () => {
    const problems = async (msg: OutboundMessageInput) => {
      const err = await enqueue(msg).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OutboundValidationError);
      expect((err as OutboundValidationError).code).toBe('RELAY_OUTBOUND_INVALID');
      return Object.fromEntries((err as OutboundValidationError).problems.map((p) => [p.field, p.problem]));
    };
    expect(await problems({ msg_id: 'bad-1', chat_id: 1, method: 'getMe', params: {} })).toHaveProperty('method');
    expect(await problems({ msg_id: 'bad-2', chat_id: 1, method: 'sendPhoto' })).toHaveProperty('params');
    expect(
      await problems({ msg_id: 'bad-3', chat_id: 1, method: 'sendPhoto', params: { photo: 'x', chat_id: 2 } }),
    ).toHaveProperty('params');
    expect(await problems({ msg_id: 'bad-4', chat_id: 1, method: 'sendPhoto', params: {} })).toHaveProperty([
      'params.photo',
    ]);
    expect(
      await problems({ msg_id: 'bad-5', chat_id: 1, method: 'editMessageText', params: { text: 'x' } }),
    ).toHaveProperty(['params.message_id|inline_message_id']);
    expect(
      await problems({ msg_id: 'bad-6', chat_id: 1, method: 'answerCallbackQuery', params: { text: 'x' } }),
    ).toHaveProperty(['params.callback_query_id']);
    expect(
      await problems({
        msg_id: 'bad-7',
        chat_id: 1,
        method: 'sendPhoto',
        params: { photo: 'x', caption: 'c'.repeat(1025) },
      }),
    ).toHaveProperty(['params.caption']);
    expect(
      await problems({ msg_id: 'bad-8', chat_id: 1, method: 'sendPhoto', params: { photo: 'attach://f' } }),
    ).toHaveProperty('params');
    expect(
      await problems({ msg_id: 'bad-9', chat_id: 1, method: 'sendPhoto', text: 'hi', params: { photo: 'x' } }),
    ).toHaveProperty('text');
    expect(
      await problems({ msg_id: 'bad-10', chat_id: 1, method: 'sendPhoto', params: { photo: 'x'.repeat(300_000) } }),
    ).toHaveProperty('params');
    expect(await problems({ msg_id: 'bad-11', chat_id: 1, text: 'x', params: { a: 1 } })).toHaveProperty('params');
    expect(await rowOf('bad-1')).toBeUndefined();
  });

  it('keeps batch order across methods (the chat FIFO follows it)', async () => {
    const rows = await withTransaction(db.pool, (c) =>
      enqueueOutboundBatch(
        c,
        boss,
        [
          { msg_id: 'b-1', chat_id: 77, text: 'first' },
          { msg_id: 'b-2', chat_id: 77, method: 'sendDice', params: {} },
          { msg_id: 'b-3', chat_id: 77, method: 'deleteMessage', params: { message_id: 5 } },
        ],
        defaults,
      ),
    );
    expect(rows.map((r) => Number(r.id))).toEqual([...rows.map((r) => Number(r.id))].sort((a, b) => a - b));
  });
});

describe('the SQL function relay.enqueue_outbound', () => {
  it('takes method and params, and the calls it took before', async () => {
    const r = (
      await db.pool.query(
        `select * from relay.enqueue_outbound('sql-photo', '42', null, method => 'sendPhoto',
                                              params => '{"photo": "https://example.com/a.jpg"}')`,
      )
    ).rows[0];
    expect(r).toMatchObject({ created: true, target_chat_id: '42' });
    expect(await rowOf('sql-photo')).toMatchObject({
      method: 'sendPhoto',
      text: null,
      params: { photo: expect.any(String) },
    });
    const old = (
      await db.pool.query(
        `select * from relay.enqueue_outbound('sql-old', '42', 'hi', 'HTML', false, null, 'message', 'at_least_once', $1)`,
        [BOT],
      )
    ).rows[0];
    expect(old).toMatchObject({ created: true });
    expect(await rowOf('sql-old')).toMatchObject({ method: 'sendMessage', params: null, message_count: 1, text: 'hi' });
  });

  it('enforces the core rules (TR422)', async () => {
    const cases: [string, RegExp][] = [
      [
        `select relay.enqueue_outbound('s-1', '5', null, method => 'getMe', params => '{}')`,
        /method must be a relayed/,
      ],
      [`select relay.enqueue_outbound('s-2', '5', null, method => 'sendPhoto')`, /params must be a JSON object/],
      [
        `select relay.enqueue_outbound('s-3', '5', null, method => 'sendPhoto', params => '[1]')`,
        /params must be a JSON object/,
      ],
      [
        `select relay.enqueue_outbound('s-4', '5', null, method => 'sendPhoto', params => '{"chat_id": 1, "photo": "x"}')`,
        /params must not contain chat_id/,
      ],
      [
        `select relay.enqueue_outbound('s-5', '5', 'text', method => 'sendPhoto', params => '{"photo": "x"}')`,
        /sendMessage fields/,
      ],
      [
        `select relay.enqueue_outbound('s-6', '5', 'hi', params => '{"a": 1}')`,
        /params is for methods other than sendMessage/,
      ],
      [`select relay.enqueue_outbound('s-7', '5', null)`, /text must be 1\.\.4096/],
    ];
    for (const [sql, message] of cases) {
      await expect(db.pool.query(sql)).rejects.toMatchObject({
        code: 'TR422',
        message: expect.stringMatching(message),
      });
    }
  });

  it('hashes a sendMessage exactly as before 0025 (rows enqueued before stay idempotent)', async () => {
    await enqueue({
      msg_id: 'hash-1',
      chat_id: 9,
      text: 'same',
      parse_mode: 'HTML',
      send_options: { protect_content: true },
    });
    const { rows } = await db.pool.query(
      `select payload_sha256 = encode(sha256(convert_to(jsonb_build_object(
                'bot_id', bot_id, 'chat_id', chat_id, 'text', text, 'parse_mode', parse_mode,
                'disable_notification', disable_notification, 'reply_markup', reply_markup,
                'send_options', send_options, 'kind', kind, 'delivery', delivery)::text, 'UTF8')), 'hex') as same
         from relay.outbound where msg_id = 'hash-1'`,
    );
    expect(rows[0].same).toBe(true);
  });
});

describe('the handler reply writer', () => {
  const reply = (n: number, extra: Partial<OutboundReply>): OutboundReply => ({
    msgId: `update:${BOT}:500:${n}`,
    botId: BOT,
    chatId: '42',
    text: '',
    sourceUpdateId: 500,
    payload: {},
    ...extra,
  });

  it('writes relayed calls with their params, uploads and placeholders in the handled transaction', async () => {
    const write = createOutboundReplyWriter({ defaults });
    const ph = [newPlaceholder(), newPlaceholder()];
    const replies = [
      reply(1, { text: 'hi', payload: { chat_id: 42, text: 'hi' }, placeholders: [newPlaceholder()] }),
      reply(2, {
        method: 'sendMediaGroup',
        params: {
          media: [
            { type: 'photo', media: 'attach://a' },
            { type: 'photo', media: 'https://x/b.jpg' },
          ],
        },
        uploads: [{ part: 'a', filename: 'a.jpg', bytes: Buffer.from('jpeg') }],
        placeholders: ph,
      }),
      reply(3, { chatId: '', method: 'answerCallbackQuery', params: { callback_query_id: 'q-9' } }),
      reply(4, { chatId: '', method: 'editMessageText', params: { inline_message_id: 'IM', text: 'x' } }),
    ];
    for (const r of replies) expect(write.validate?.(r)).toEqual([]);
    await withTransaction(db.pool, (c) => write(c, replies));
    const rows = (
      await db.pool.query(
        `select msg_id, method, kind, text, target_chat_id, message_count, placeholders,
                (select count(*)::int from relay.outbound_uploads u where u.outbound_id = o.id) as uploads
           from relay.outbound o where source_update_id = 500 order by id`,
      )
    ).rows;
    expect(rows).toEqual([
      expect.objectContaining({ method: 'sendMessage', kind: 'reply', text: 'hi', target_chat_id: '42', uploads: 0 }),
      expect.objectContaining({ method: 'sendMediaGroup', message_count: 2, placeholders: ph.map(String), uploads: 1 }),
      expect.objectContaining({ method: 'answerCallbackQuery', target_chat_id: null, message_count: 0 }),
      expect.objectContaining({ method: 'editMessageText', target_chat_id: 'inline:IM' }),
    ]);
  });

  it('refuses at the call what could not be written: a chat for a message, the method rules', () => {
    expect(validateOutboundReply(reply(5, { chatId: '', method: 'sendPhoto', params: { photo: 'x' } }))).toEqual([
      expect.objectContaining({ field: 'chat_id' }),
    ]);
    expect(validateOutboundReply(reply(6, { method: 'sendPhoto', params: { photo: 'attach://missing' } }))).toEqual([
      expect.objectContaining({ field: 'params' }),
    ]);
  });
});
