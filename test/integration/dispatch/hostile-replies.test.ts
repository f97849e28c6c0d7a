/**
 * one handler reply Telegram would refuse (5,000 characters, blank, a lone
 * surrogate, a NUL) or an error text cut inside a surrogate pair must never jam dispatch. The bad
 * update fails alone, at once, with a reason; every other chat is answered.
 * Real PostgreSQL, the real engine with update.dispatch and outbound.send, the Bot API sandbox.
 */
import type { BossLedger } from '../../../libs/db/boss';
import { createBoss, QUEUES, withTransaction } from '../../../libs/db';
import {
  createDispatchKind,
  createOutboundReplySink,
  createUpdateRunner,
  InvalidReplyError,
  resolveBotHandlers,
  type RegisterHandlers,
} from '../../../libs/dispatch';
import {
  createOutboundKind,
  createOutboundRateLimiter,
  createOutboundReplyWriter,
  OUTBOUND_RATE_LIMITS_DEFAULT,
} from '../../../libs/outbound';
import { createWorker, enqueueJobs, newJobId, Worker } from '../../../libs/queue';
import { createBotApiSandbox, type BotApiSandbox } from '../../../libs/sandbox';
import { createBotApiClient } from '../../../libs/telegram';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import { testLogger } from '../../support/worker-harness';

const TOKEN = '4141:hostile-replies-token-not-secret';
const BOT = '4141';
const EMOJI = '\u{1F600}';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let boss: BossLedger;
let sb: BotApiSandbox;
let worker: Worker | undefined;
let updateSeq = 700;

beforeAll(async () => {
  db = await createMigratedDatabase('dsp_hostile');
  boss = createBoss(db.url, { max: 1 });
  sb = createBotApiSandbox({ limits: { enabled: false } });
  await sb.start();
});
afterEach(async () => {
  await worker?.stop({ timeoutMs: 3_000 });
  worker = undefined;
});
afterAll(async () => {
  await sb.stop();
  await boss.stop({ graceful: false, wait: true }).catch(() => undefined);
  await db.drop();
});

async function start(register: RegisterHandlers, opts: { validateAtReply?: boolean } = {}): Promise<void> {
  const logger = testLogger();
  const writer = createOutboundReplyWriter({ defaults: { botId: BOT } });
  if (opts.validateAtReply === false) delete writer.validate; // the bad reply reaches the outcome transaction
  const runner = createUpdateRunner({
    token: TOKEN,
    botId: BOT,
    apiRoot: sb.url,
    handlers: resolveBotHandlers({ register }),
    replySink: createOutboundReplySink({ write: writer }),
    logger,
  });
  await runner.start();
  const telegram = createBotApiClient({ token: TOKEN, apiRoot: sb.url });
  const limiter = createOutboundRateLimiter({ ...OUTBOUND_RATE_LIMITS_DEFAULT, mode: 'reactive' });
  worker = createWorker({
    pool: db.pool,
    boss,
    logger,
    databaseUrl: db.url,
    kinds: [
      createDispatchKind({ runner, handlerTimeoutMs: 5_000 }),
      createOutboundKind({ pool: db.pool, telegram, limiter, sendTimeoutMs: 5_000 }),
    ],
    config: { concurrency: 8, staleAfterMs: 30_000, retry: { baseMs: 20, capMs: 50, maxAttempts: 3 } },
  });
  await worker.start();
}

/** Stores message updates as ingress would (inbox rows + update.dispatch jobs, one transaction). */
async function storeUpdates(items: { chatId: number; text: string }[]): Promise<number[]> {
  const ids = items.map(() => ++updateSeq);
  await withTransaction(db.pool, async (c) => {
    for (const [i, it] of items.entries()) {
      const updateId = ids[i];
      const update = {
        update_id: updateId,
        message: {
          message_id: updateId,
          date: 1_700_000_000,
          chat: { id: it.chatId, type: 'private', first_name: 'U' },
          from: { id: it.chatId, is_bot: false, first_name: 'U' },
          text: it.text,
        },
      };
      const jobId = newJobId();
      const { rows } = await c.query(
        `insert into relay.inbox (bot_id, update_id, update_type, chat_id, payload, job_id) values ($1, $2, 'message', $3, $4, $5) returning id`,
        [BOT, updateId, it.chatId, update, jobId],
      );
      await enqueueJobs(c, boss, QUEUES.dispatch, [{ id: jobId, data: { id: Number(rows[0].id) } }]);
    }
  });
  return ids;
}

const inbox = async (updateId: number) =>
  (
    await db.pool.query('select id::text, state, attempts, last_error from relay.inbox where update_id = $1', [
      updateId,
    ])
  ).rows[0] as { id: string; state: string; attempts: number; last_error: string | null } | undefined;
const audit = async (inboxId: string) =>
  (
    await db.pool.query(
      `select outcome, error_code, error from relay.attempts where subject = 'inbox' and subject_id = $1 order by id`,
      [inboxId],
    )
  ).rows;
const replies = async (updateId: number) =>
  (await db.pool.query('select text, state from relay.outbound where source_update_id = $1 order by id', [updateId]))
    .rows;
const sentTo = (chat: number) =>
  sb
    .sent(TOKEN)
    .filter((m) => m.chat_id === chat)
    .map((m) => m.text);

/** The reply a message asks for: its text names a hostile case. */
const HOSTILE: Record<string, () => string> = {
  long: () => 'x'.repeat(5_000),
  blank: () => ' \n\t ',
  empty: () => '',
  surrogate: () => `cut ${EMOJI.slice(0, 1)} here`,
  nul: () => 'a\u0000b',
};

const echoOrHostile: RegisterHandlers = (bot) => {
  bot.on('text', async (ctx) => {
    const make = HOSTILE[ctx.message.text];
    await ctx.reply(make ? make() : `echo: ${ctx.message.text}`);
  });
};

describe('an invalid handler reply fails its own update, at once, and blocks nobody', () => {
  it('a 5,000-character reply: that update is failed with RELAY_INVALID_REPLY after one attempt; another chat is answered', async () => {
    await start(echoOrHostile);
    const [bad, good1, good2] = await storeUpdates([
      { chatId: 61, text: 'long' },
      { chatId: 62, text: 'hi' },
      { chatId: 62, text: 'again' },
    ]);
    await waitFor(async () => (await replies(good2))[0]?.state === 'delivered', {
      what: 'the other chat answered',
      timeoutMs: 15_000,
    });
    expect(sentTo(62)).toEqual(['echo: hi', 'echo: again']);
    expect((await inbox(good1))!.state).toBe('handled');
    const row = await waitFor(
      async () => {
        const r = await inbox(bad);
        return r?.state === 'failed' ? r : undefined;
      },
      { what: 'the bad update failed' },
    );
    expect(row.attempts).toBe(1);
    expect(row.last_error).toMatch(/RELAY_INVALID_REPLY/);
    expect(row.last_error).toMatch(/text must be 1\.\.4096 characters, got 5000/);
    expect(await audit(row.id)).toEqual([
      expect.objectContaining({ outcome: 'failed', error_code: 'RELAY_INVALID_REPLY' }),
    ]);
    expect(await replies(bad)).toEqual([]);
    expect(sentTo(61)).toEqual([]);
  });

  it.each(['blank', 'empty', 'surrogate', 'nul'])(
    "a %s reply fails alone with a reason; the same chat's next update and other chats go on",
    async (kind) => {
      await start(echoOrHostile);
      const chat = 70 + Object.keys(HOSTILE).indexOf(kind);
      const [bad, next, other] = await storeUpdates([
        { chatId: chat, text: kind },
        { chatId: chat, text: 'after' },
        { chatId: 69, text: `other-${kind}` },
      ]);
      await waitFor(
        async () => (await replies(next))[0]?.state === 'delivered' && (await replies(other))[0]?.state === 'delivered',
        {
          what: 'the next update and the other chat answered',
          timeoutMs: 15_000,
        },
      );
      const row = (await inbox(bad))!;
      expect(row).toMatchObject({ state: 'failed', attempts: 1 });
      expect(row.last_error).toMatch(/^RELAY_INVALID_REPLY: reply 1 \(sendMessage\) refused/);
      expect(await replies(bad)).toEqual([]);
      expect(sentTo(chat)).toEqual(['echo: after']);
    },
  );

  it('the handler sees the refusal at ctx.reply and can answer something else: handled', async () => {
    await start((bot) => {
      bot.on('text', async (ctx) => {
        try {
          await ctx.reply('y'.repeat(5_000));
        } catch (err) {
          if (!(err instanceof InvalidReplyError)) throw err;
          await ctx.reply(`too long (${err.code})`);
        }
      });
    });
    const [u] = await storeUpdates([{ chatId: 80, text: 'x' }]);
    await waitFor(async () => (await replies(u))[0]?.state === 'delivered', { what: 'fallback reply delivered' });
    expect((await inbox(u))!.state).toBe('handled');
    expect(sentTo(80)).toEqual(['too long (RELAY_INVALID_REPLY)']);
  });

  it('an error text cut inside a surrogate pair, or holding a NUL, is stored sanitized: retried and failed normally, nothing jams', async () => {
    await start((bot) => {
      bot.hears('emoji-error', () => {
        throw new Error(EMOJI.repeat(400).slice(0, 499)); // ends in half an emoji; 499 code units
      });
      bot.hears('nul-error', () => {
        throw new Error(`bad\u0000value ${EMOJI.slice(1)}`);
      });
      bot.on('text', (ctx) => ctx.reply(`echo: ${ctx.message.text}`));
    });
    const [e1, e2, good] = await storeUpdates([
      { chatId: 81, text: 'emoji-error' },
      { chatId: 82, text: 'nul-error' },
      { chatId: 83, text: 'fine' },
    ]);
    await waitFor(async () => (await replies(good))[0]?.state === 'delivered', {
      what: 'the other chat answered',
      timeoutMs: 15_000,
    });
    for (const id of [e1, e2]) {
      const row = await waitFor(
        async () => {
          const r = await inbox(id);
          return r?.state === 'failed' ? r : undefined;
        },
        { what: `update ${id} failed after its budget`, timeoutMs: 15_000 },
      );
      expect(row.attempts).toBe(3);
      // matches NUL on purpose: the stored error must never contain one
      // eslint-disable-next-line no-control-regex -- NUL is what this pattern is for
      const unstorable = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
      expect(row.last_error).not.toMatch(unstorable);
      expect((await audit(row.id)).map((a) => a.outcome)).toEqual(['retry', 'retry', 'failed']);
    }
    expect((await inbox(e1))!.last_error).toContain(EMOJI.repeat(10));
    expect((await inbox(e2))!.last_error).toMatch(/bad\uFFFDvalue \uFFFD/);
  });

  it('defence in depth: a reply the outcome transaction refuses is isolated by the outcome writer; the batch and other chats land', async () => {
    await start(echoOrHostile, { validateAtReply: false });
    const items = [
      { chatId: 91, text: 'long' },
      ...Array.from({ length: 6 }, (_, i) => ({ chatId: 92 + i, text: `fine ${i}` })),
      { chatId: 98, text: 'nul' },
    ];
    const ids = await storeUpdates(items);
    const good = ids.filter((_, i) => items[i].text.startsWith('fine'));
    await waitFor(async () => (await Promise.all(good.map(replies))).every((r) => r[0]?.state === 'delivered'), {
      what: 'every good update answered',
      timeoutMs: 15_000,
    });
    for (const id of [ids[0], ids[ids.length - 1]]) {
      const row = await waitFor(
        async () => {
          const r = await inbox(id);
          return r?.state === 'failed' ? r : undefined;
        },
        { what: `poison update ${id} failed`, timeoutMs: 15_000 },
      );
      expect(row.attempts).toBe(1);
      expect(row.last_error).toMatch(/outcome could not be written: invalid outbound message/);
      expect(await audit(row.id)).toEqual([
        expect.objectContaining({ outcome: 'failed', error_code: 'RELAY_OUTCOME_UNWRITABLE' }),
      ]);
      expect(await replies(id)).toEqual([]);
    }
    for (const id of good) expect((await inbox(id))!.state).toBe('handled');
  });

  it('telegraf refusing an input itself (ctx.reply on an update without a chat) is caught and fails that update at once', async () => {
    await start((bot) => {
      bot.on('poll', (ctx) => ctx.reply('no chat to reply to'));
      bot.on('text', (ctx) => ctx.reply(`echo: ${ctx.message.text}`));
    });
    const pollId = ++updateSeq;
    await withTransaction(db.pool, async (c) => {
      const jobId = newJobId();
      const poll = {
        update_id: pollId,
        poll: {
          id: 'p1',
          question: 'q',
          options: [],
          total_voter_count: 0,
          is_closed: false,
          is_anonymous: true,
          type: 'regular',
          allows_multiple_answers: false,
        },
      };
      const { rows } = await c.query(
        `insert into relay.inbox (bot_id, update_id, update_type, chat_id, payload, job_id) values ($1, $2, 'poll', null, $3, $4) returning id`,
        [BOT, pollId, poll, jobId],
      );
      await enqueueJobs(c, boss, QUEUES.dispatch, [{ id: jobId, data: { id: Number(rows[0].id) } }]);
    });
    const [good] = await storeUpdates([{ chatId: 84, text: 'fine' }]);
    await waitFor(async () => (await replies(good))[0]?.state === 'delivered', { what: 'the other update answered' });
    const row = await waitFor(
      async () => {
        const r = await inbox(pollId);
        return r?.state === 'failed' ? r : undefined;
      },
      { what: 'the poll update failed' },
    );
    expect(row.attempts).toBe(1);
    expect(row.last_error).toBe(
      'RELAY_TELEGRAF_REFUSED: telegraf refused the call: "sendMessage" isn\'t available for "poll"',
    );
    expect(await audit(row.id)).toEqual([
      expect.objectContaining({ outcome: 'failed', error_code: 'RELAY_TELEGRAF_REFUSED' }),
    ]);
  });
});
