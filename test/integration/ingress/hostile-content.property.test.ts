/**
 * Property suite at the ingress boundary: arbitrary Unicode — NUL, lone surrogates,
 * `\u0000`-looking text, RTL marks, 4096+ lengths — in every user-controlled field of message,
 * edited_message, channel_post, callback_query, inline_query and my_chat_member updates, through
 *   plan (both decode policies) → persist (real PostgreSQL) → dispatch (the dispatch claim query and
 *   a real telegraf bot) → capture (deliverCapture to a real collector HTTP server).
 * Invariants: nothing is quarantined or halted; every update is stored exactly once (a redelivery
 * adds nothing and is no capture conflict); the raw text round-trips byte for byte; telegraf sees
 * the exact update; the collector receives the exact text; no exception escapes the batch; the
 * plain control update of each batch is unaffected.
 */
import fc from 'fast-check';
import type { BossLedger } from '../../../libs/db/boss';
import { createBoss } from '../../../libs/db';
import { QUEUES } from '../../../libs/db/boss';
import { deliverCapture } from '../../../libs/captures/deliver';
import { createDirectReplySink, createUpdateRunner, resolveBotHandlers, UpdateRunner } from '../../../libs/dispatch';
import { defineBot } from '../../../libs/dispatch/handlers-module';
import { inboxClaim } from '../../../libs/dispatch/queries';
import { persistBatch } from '../../../libs/ingress/persist-batch';
import { planBatch } from '../../../libs/ingress/plan-batch';
import { cursorAcquire, cursorEnsure } from '../../../libs/ingress/queries';
import { BotApiSandbox, Collector, createCollector } from '../../../libs/sandbox';
import { createMigratedDatabase } from '../../support/db';
import { memoryLogger, startSandbox } from '../../support/ingress-harness';

const NUM_RUNS = Number(process.env.PROPERTY_RUNS ?? 30);
const TOKEN = '5000000001:property-suite-token';
const BOT_ID = '5000000001';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let boss: BossLedger;
let sandbox: BotApiSandbox;
let collector: Collector;
let runner: UpdateRunner;
/** What the telegraf bot saw, by update_id: the whole update, and the text its message handler read. */
const seen = new Map<number, { update: unknown; text?: string }>();

beforeAll(async () => {
  db = await createMigratedDatabase('ingress_property');
  boss = createBoss(db.url, { max: 2 });
  sandbox = await startSandbox();
  collector = createCollector({ port: 0 });
  await collector.start();
  runner = createUpdateRunner({
    token: TOKEN,
    botId: BOT_ID,
    apiRoot: sandbox.url,
    handlers: resolveBotHandlers({
      register: defineBot((bot) => {
        bot.use((ctx, next) => {
          seen.set(ctx.update.update_id, { update: ctx.update });
          return next();
        });
        bot.on(['message', 'edited_message', 'channel_post'], (ctx) => {
          seen.get(ctx.update.update_id)!.text = ctx.text; // the message's text, else its caption
        });
      }),
    }),
    replySink: createDirectReplySink(),
    logger: memoryLogger('silent').logger,
  });
  await runner.start();
  await cursorEnsure(db.pool, BOT_ID);
});

afterAll(async () => {
  await collector.stop();
  await sandbox.stop();
  await db.drop();
});

// ---------------------------------------------------------------------------------------------
// Hostile strings

const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c));
const nasty = fc.constantFrom(
  '\u0000',
  '\\u0000',
  '\\\\u0000',
  '\\',
  '"',
  '\u202e',
  '\u200f',
  '\u2066',
  '\ud83d',
  '\ude00',
  '😀',
  '\\ud800',
  '\ufeff',
  '\u2028',
  '\n',
  '</script>',
  '{"update_id":1}',
);
const piece = fc.oneof(
  { weight: 3, arbitrary: nasty },
  { weight: 2, arbitrary: fc.string16bits({ maxLength: 8 }) },
  { weight: 2, arbitrary: fc.fullUnicodeString({ maxLength: 8 }) },
  { weight: 1, arbitrary: loneSurrogate },
);
const shortHostile = fc.array(piece, { maxLength: 8 }).map((a) => a.join(''));
/** Sometimes 4096+ UTF-16 units (cut anywhere, so pairs may split). */
const hostile = fc.oneof(
  { weight: 5, arbitrary: shortHostile },
  {
    weight: 1,
    arbitrary: fc.tuple(shortHostile, fc.integer({ min: 4096, max: 5000 })).map(([s, n]) => {
      const unit = s.length > 0 ? s : '\u0000x';
      return unit.repeat(Math.ceil(n / unit.length)).slice(0, n);
    }),
  },
);

// ---------------------------------------------------------------------------------------------
// Updates with a hostile string in every user-controlled field

type Kind = 'message' | 'edited_message' | 'channel_post' | 'callback_query' | 'inline_query' | 'my_chat_member';
const KINDS: Kind[] = ['message', 'edited_message', 'channel_post', 'callback_query', 'inline_query', 'my_chat_member'];

const user = (id: number, s: string[]) => ({
  id,
  is_bot: false,
  first_name: s[0],
  last_name: s[1],
  username: s[2],
  language_code: s[3],
});

function build(
  kind: Kind,
  updateId: number,
  chatId: number,
  s: string[],
  useCaption: boolean,
): Record<string, unknown> {
  const chat = { id: chatId, type: kind === 'channel_post' ? 'channel' : 'supergroup', title: s[4], username: s[5] };
  const message = (): Record<string, unknown> => {
    const m: Record<string, unknown> = { message_id: updateId, date: 1_700_000_000, chat };
    if (kind !== 'channel_post') m.from = user(chatId + 1, s);
    else m.author_signature = s[6];
    if (useCaption)
      Object.assign(m, { caption: s[7], photo: [{ file_id: s[8], file_unique_id: 'u', width: 1, height: 1 }] });
    else Object.assign(m, { text: s[7], entities: [{ type: 'bold', offset: 0, length: 1 }] });
    if (kind === 'edited_message') m.edit_date = 1_700_000_001;
    m.reply_markup = { inline_keyboard: [[{ text: s[9], callback_data: s[10] }]] };
    return m;
  };
  switch (kind) {
    case 'message':
    case 'edited_message':
    case 'channel_post':
      return { update_id: updateId, [kind]: message() };
    case 'callback_query':
      return {
        update_id: updateId,
        callback_query: {
          id: s[0],
          from: user(chatId + 1, s),
          message: { message_id: 1, date: 1, chat, text: s[7] },
          chat_instance: s[8],
          data: s[10],
        },
      };
    case 'inline_query':
      return { update_id: updateId, inline_query: { id: s[0], from: user(chatId + 1, s), query: s[7], offset: s[8] } };
    case 'my_chat_member':
      return {
        update_id: updateId,
        my_chat_member: {
          chat,
          from: user(chatId + 1, s),
          date: 1,
          old_chat_member: { status: 'left', user: user(chatId + 2, s.slice(3)) },
          new_chat_member: { status: 'member', user: user(chatId + 2, s.slice(2)) },
          invite_link: { invite_link: s[9], name: s[10] },
        },
      };
  }
}

const item = fc.record({
  kind: fc.constantFrom(...KINDS),
  strings: fc.array(hostile, { minLength: 11, maxLength: 11 }),
  caption: fc.boolean(),
});
const batch = fc.record({
  items: fc.array(item, { minLength: 1, maxLength: 4 }),
  controlAt: fc.nat(),
  policy: fc.constantFrom('stop' as const, 'quarantine' as const),
});

let nextUpdateId = 1;
let nextChat = 7_000_000;
const MESSAGE_KINDS = new Set(['message', 'edited_message', 'channel_post']);

describe('ingress boundary: hostile user content', () => {
  it('is stored exactly once, round-trips byte for byte, reaches telegraf and the collector unchanged, and leaves the rest of the batch alone', async () => {
    await fc.assert(
      fc.asyncProperty(batch, async ({ items, controlAt, policy }) => {
        const chatId = (nextChat += 10);
        const makers: Array<(id: number) => Record<string, unknown>> = items.map(
          (it) => (id) => build(it.kind, id, chatId, it.strings, it.caption),
        );
        const control = (id: number) => ({
          update_id: id,
          message: {
            message_id: 1,
            date: 1_700_000_000,
            chat: { id: chatId + 5, type: 'private' },
            from: { id: chatId + 5, is_bot: false, first_name: 'C' },
            text: 'control',
          },
        });
        makers.splice(controlAt % (makers.length + 1), 0, control);
        const updates = makers.map((make) => make(nextUpdateId++));
        const raws = updates.map((u) => JSON.stringify(u));
        const ids = updates.map((u) => u.update_id as number);

        // plan: nothing judged
        const offset = ids[0];
        const plan = planBatch(raws, { policy, offset, transport: 'polling' });
        expect(plan.halt).toBeNull();
        expect(plan.quarantine).toEqual([]);
        expect(plan.updates.map((u) => u.updateId)).toEqual(ids);

        // persist (twice: a redelivery is absorbed, identical captures are no conflict)
        const got = await cursorAcquire(db.pool, BOT_ID, 'property', 60_000);
        const fence = { owner: 'property', generation: got!.generation };
        const o = {
          botId: BOT_ID,
          fence,
          leaseTtlMs: 60_000,
          allowedChatIds: new Set<string>(),
          dispatchUnauthorized: false,
          halt: null,
        };
        const first = await persistBatch({ pool: db.pool, boss }, plan, o);
        expect(first).toMatchObject({ stored: updates.length, duplicates: 0, quarantined: 0 });
        const again = await persistBatch(
          { pool: db.pool, boss },
          planBatch(raws, { policy, offset, transport: 'polling' }),
          o,
        );
        expect(again).toMatchObject({ stored: 0, duplicates: updates.length, captures: 0 });

        const { rows } = await db.pool.query(
          `select update_id, raw::text as raw, payload::text as payload from relay.inbox where bot_id = $1 and update_id = any($2::bigint[]) order by update_id`,
          [BOT_ID, ids],
        );
        expect(rows.map((r) => Number(r.update_id))).toEqual(ids); // exactly once each
        expect(rows.map((r) => r.raw)).toEqual(raws); // byte for byte
        for (const r of rows) expect(JSON.parse(r.payload).update_id).toBe(Number(r.update_id)); // the jsonb copy exists

        // dispatch: claimed as the worker claims, run by telegraf
        const claimed = await inboxClaim(db.pool, {
          botId: BOT_ID,
          limit: 100,
          workerId: 'property',
          now: null,
          ordered: false,
          queue: QUEUES.dispatch,
        });
        expect(claimed.rows.map((r) => Number(r.update_id)).sort((a, b) => a - b)).toEqual(ids);
        for (const r of claimed.rows) {
          const out = await runner.runUpdate(r.payload, { timeoutMs: 5_000 });
          expect(out.kind).toBe('handled');
        }
        for (const u of updates) {
          const s = seen.get(u.update_id as number);
          expect(s?.update).toEqual(u);
          const kind = Object.keys(u).find((k) => k !== 'update_id')!;
          if (MESSAGE_KINDS.has(kind)) {
            const m = u[kind] as { text?: string; caption?: string };
            expect(s?.text).toBe(m.text ?? m.caption);
          }
        }

        // capture: the collector receives the exact text and message
        const caps = await db.pool.query(
          `select id::text, capture_key, payload, payload_raw, update_id from relay.captures where update_id = any($1::bigint[]) order by update_id`,
          [ids],
        );
        const withMessage = updates.filter((u) => MESSAGE_KINDS.has(Object.keys(u).find((k) => k !== 'update_id')!));
        expect(caps.rows.map((c) => Number(c.update_id))).toEqual(withMessage.map((u) => u.update_id));
        for (const c of caps.rows)
          expect((await deliverCapture(c, { url: collector.captureUrl, timeoutMs: 5_000 })).type).toBe('delivered');
        const byKey = collector.byKey();
        for (const u of withMessage) {
          const kind = Object.keys(u).find((k) => k !== 'update_id')!;
          const m = u[kind] as { message_id: number; chat: { id: number }; text?: string; caption?: string };
          const receipts = byKey.get(`telegram:${BOT_ID}:${String(u.update_id)}:${m.chat.id}:${m.message_id}`);
          expect(receipts).toHaveLength(1);
          const body = receipts![0].body as { text: string; message: unknown };
          expect(body.text).toBe(m.text ?? m.caption);
          expect(body.message).toEqual(m);
        }
      }),
      { numRuns: NUM_RUNS, seed: process.env.PROPERTY_SEED ? Number(process.env.PROPERTY_SEED) : undefined },
    );
  });
});
