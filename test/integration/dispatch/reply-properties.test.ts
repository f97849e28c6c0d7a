/**
 * Property suite: arbitrary handler replies — any Unicode text (NUL, lone surrogates,
 * `\u0000`-looking text, RTL marks, blank, 0/4096/5000+ characters) with arbitrary extra sendMessage
 * options — through the outbound reply sink and the engine's outcome writer, against the real
 * database. Invariants, checked on the database after every run:
 * - every update settles (no exception escapes a batch, nothing stays pending: no jam);
 * - an update whose replies are all valid is handled and each reply is enqueued exactly once, in order,
 *   with its exact text;
 * - an update with an invalid reply fails alone, after one attempt, with RELAY_INVALID_REPLY as its
 *   reason, and none of its replies is enqueued;
 * - other updates (other chats, and the same chat's later updates) are handled.
 * The validity oracle is written here independently of libs/outbound's validation.
 */
import fc from 'fast-check';
import type { BossLedger } from '../../../libs/db/boss';
import { createBoss, QUEUES, withTransaction } from '../../../libs/db';
import {
  createDispatchKind,
  createOutboundReplySink,
  createUpdateRunner,
  resolveBotHandlers,
  type RegisterHandlers,
} from '../../../libs/dispatch';
import { createOutboundReplyWriter } from '../../../libs/outbound';
import { createWorker, enqueueJobs, newJobId, Worker } from '../../../libs/queue';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import { testLogger } from '../../support/worker-harness';

const TOKEN = '4343:reply-properties-token-not-secret';
const BOT = '4343';
const RESERVED = new Set([
  'chat_id',
  'text',
  'parse_mode',
  'disable_notification',
  'reply_markup',
  'reply_parameters',
  'message_thread_id',
  '__proto__',
]);

interface Reply {
  text: string;
  extra: Record<string, unknown>;
}

const plans = new Map<number, Reply[]>();
let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let boss: BossLedger;
let worker: Worker;
let updateSeq = 10_000;
let chatSeq = 1_000;

beforeAll(async () => {
  db = await createMigratedDatabase('dsp_reply_props');
  boss = createBoss(db.url, { max: 1 });
  const logger = testLogger();
  const writer = createOutboundReplyWriter({ defaults: { botId: BOT } });
  const runner = createUpdateRunner({
    token: TOKEN,
    botId: BOT,
    apiRoot: 'http://127.0.0.1:9', // never called: sendMessage is captured, botInfo is given
    botInfo: {
      id: 4343,
      is_bot: true,
      first_name: 'Props',
      username: 'props_bot',
      can_join_groups: false,
      can_read_all_group_messages: false,
      supports_inline_queries: false,
    },
    handlers: resolveBotHandlers({
      register: ((bot) => {
        bot.on('message', async (ctx) => {
          for (const r of plans.get(ctx.update.update_id) ?? []) await ctx.reply(r.text, r.extra);
        });
      }) satisfies RegisterHandlers,
    }),
    replySink: createOutboundReplySink({ write: writer }),
    logger,
  });
  await runner.start();
  worker = createWorker({
    pool: db.pool,
    boss,
    logger,
    databaseUrl: db.url,
    kinds: [createDispatchKind({ runner, handlerTimeoutMs: 10_000 })],
    config: { concurrency: 8, staleAfterMs: 30_000, retry: { baseMs: 10, capMs: 30, maxAttempts: 2 } },
  });
  await worker.start();
});
afterAll(async () => {
  await worker?.stop({ timeoutMs: 3_000 });
  await boss.stop({ graceful: false, wait: true }).catch(() => undefined);
  await db.drop();
});

// ---- generators -------------------------------------------------------------------------------

const EMOJI = '\u{1F600}';
const hostilePieces = fc.constantFrom(
  '',
  ' ',
  '\n\t ',
  '\u00a0',
  '\u200f',
  '\u202e',
  '\u0000',
  'a\u0000b',
  '\\u0000',
  'see C:\\u0000dir',
  '\\',
  '"',
  EMOJI,
  EMOJI.slice(0, 1),
  EMOJI.slice(1),
  '\u0085',
  '\u3000',
  '\ufeff',
  '<b>',
  '*_[',
  'é',
  '\u{10FFFF}',
);
const text = fc.oneof(
  { arbitrary: fc.string({ unit: 'binary', maxLength: 40 }), weight: 4 },
  { arbitrary: fc.array(hostilePieces, { maxLength: 6 }).map((a) => a.join('')), weight: 4 },
  {
    arbitrary: fc
      .tuple(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 10 }), hostilePieces)
      .map(([a, b]) => a + b),
    weight: 3,
  },
  { arbitrary: fc.integer({ min: 4090, max: 4100 }).map((n) => 'x'.repeat(n)), weight: 1 },
  { arbitrary: fc.integer({ min: 2046, max: 2050 }).map((n) => EMOJI.repeat(n)), weight: 1 }, // 4096 code points = 8192 UTF-16 units
  { arbitrary: fc.integer({ min: 5_000, max: 6_000 }).map((n) => 'é'.repeat(n)), weight: 1 },
  { arbitrary: fc.integer({ min: 0, max: 4095 }).map((n) => EMOJI.repeat(2048).slice(0, n * 2 + 1)), weight: 1 }, // ends in half an emoji
);
const optionKey = fc
  .oneof(
    fc.string({ unit: 'binary', minLength: 1, maxLength: 8 }),
    fc.constantFrom('protect_content', 'link_preview_options', 'entities'),
  )
  .filter((k) => !RESERVED.has(k));
const optionValue = fc.oneof(
  fc.boolean(),
  fc.integer(),
  fc.string({ unit: 'binary', maxLength: 12 }),
  hostilePieces,
  fc.dictionary(
    fc.string({ unit: 'binary', maxLength: 4 }).filter((k) => k !== '__proto__'),
    fc.oneof(hostilePieces, fc.integer()),
    { maxKeys: 2 },
  ),
);
const reply: fc.Arbitrary<Reply> = fc.record({
  text,
  extra: fc
    .tuple(
      fc.dictionary(optionKey, optionValue, { maxKeys: 3 }),
      fc.option(fc.constantFrom('HTML', 'MarkdownV2', 'markdown'), { nil: undefined }),
    )
    .map(([o, pm]) => {
      const extra: Record<string, unknown> = { ...o };
      if (pm) extra.parse_mode = pm;
      return extra;
    }),
});
/** 2..6 updates over 1..3 chats, each with 0..3 replies. */
const scenario = fc.array(
  fc.record({ chat: fc.integer({ min: 0, max: 2 }), replies: fc.array(reply, { maxLength: 3 }) }),
  { minLength: 2, maxLength: 6 },
);

// ---- the oracle -------------------------------------------------------------------------------

/** No lone surrogate (a paired one is one code point under the u flag). */
const wellFormed = (s: string) => !/\p{Cs}/u.test(s);

const storable = (s: string) => wellFormed(s) && !s.includes('\u0000');
function storableDeep(v: unknown): boolean {
  if (typeof v === 'string') return storable(v);
  if (v === null || typeof v !== 'object') return true;
  return Object.entries(v as Record<string, unknown>).every(([k, x]) => storable(k) && storableDeep(x));
}
function validReply(r: Reply): boolean {
  const n = [...r.text].length;
  return n >= 1 && n <= 4096 && storable(r.text) && /\S/.test(r.text) && storableDeep(r.extra);
}

// ---- the property -----------------------------------------------------------------------------

async function storeUpdates(updates: { updateId: number; chatId: number }[]): Promise<void> {
  await withTransaction(db.pool, async (c) => {
    for (const u of updates) {
      const payload = {
        update_id: u.updateId,
        message: {
          message_id: u.updateId,
          date: 1_700_000_000,
          chat: { id: u.chatId, type: 'private', first_name: 'U' },
          from: { id: u.chatId, is_bot: false, first_name: 'U' },
          text: 'go',
        },
      };
      const jobId = newJobId();
      const { rows } = await c.query(
        `insert into relay.inbox (bot_id, update_id, update_type, chat_id, payload, job_id) values ($1, $2, 'message', $3, $4, $5) returning id`,
        [BOT, u.updateId, u.chatId, payload, jobId],
      );
      await enqueueJobs(c, boss, QUEUES.dispatch, [{ id: jobId, data: { id: Number(rows[0].id) } }]);
    }
  });
}

it('arbitrary handler replies: each invalid one fails its update alone with a reason; valid ones are enqueued exactly once; nothing jams', async () => {
  await fc.assert(
    fc.asyncProperty(scenario, async (sc) => {
      const chats = [++chatSeq, ++chatSeq, ++chatSeq];
      const updates = sc.map((s) => ({ updateId: ++updateSeq, chatId: chats[s.chat], replies: s.replies }));
      for (const u of updates) plans.set(u.updateId, u.replies);
      await storeUpdates(updates);
      const ids = updates.map((u) => u.updateId);
      const rows = await waitFor(
        async () => {
          const { rows: r } = await db.pool.query(
            'select update_id::int as id, state, attempts, last_error from relay.inbox where update_id = any($1::bigint[])',
            [ids],
          );
          return r.length === ids.length && r.every((x) => x.state !== 'pending') ? r : undefined;
        },
        { what: 'every update of the run settled (no jam)', timeoutMs: 20_000 },
      );
      const byId = new Map(rows.map((r) => [r.id as number, r]));
      const { rows: out } = await db.pool.query(
        'select source_update_id::int as src, msg_id, text, kind from relay.outbound where source_update_id = any($1::bigint[]) order by id',
        [ids],
      );
      for (const u of updates) {
        const row = byId.get(u.updateId)!;
        const mine = out.filter((o) => o.src === u.updateId);
        if (u.replies.every(validReply)) {
          expect({ id: u.updateId, state: row.state }).toEqual({ id: u.updateId, state: 'handled' });
          expect(mine.map((o) => o.msg_id)).toEqual(u.replies.map((_, i) => `update:${BOT}:${u.updateId}:${i + 1}`));
          expect(mine.map((o) => o.text)).toEqual(u.replies.map((r) => r.text));
        } else {
          expect({ id: u.updateId, state: row.state, attempts: row.attempts }).toEqual({
            id: u.updateId,
            state: 'failed',
            attempts: 1,
          });
          expect(row.last_error).toMatch(
            /^RELAY_INVALID_REPLY: reply \d+ \(sendMessage\) refused before it was queued: /,
          );
          expect(storable(row.last_error)).toBe(true);
          expect(mine).toEqual([]);
        }
      }
    }),
    { numRuns: 30, seed: Number(process.env.FC_SEED ?? 1212), endOnFailure: true },
  );
}, 240_000);
