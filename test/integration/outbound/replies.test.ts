/**
 * Way in #3: handler replies. Dispatch (REPLY_MODE=outbound) captures ctx.reply and hands the replies
 * to the outbound writer inside the transaction that marks the update handled; outbound.send then
 * sends them. A retried handler never sends a reply twice; a failed one sends none.
 */
import type { BossLedger } from '../../../libs/db/boss';
import { createBoss, QUEUES, withTransaction } from '../../../libs/db';
import {
  callApiDirect,
  createDispatchKind,
  createOutboundReplySink,
  createUpdateRunner,
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

const TOKEN = '4040:replies-test-token-not-secret';
const BOT = '4040';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let boss: BossLedger;
let sb: BotApiSandbox;
let worker: Worker | undefined;
let updateSeq = 500;

beforeAll(async () => {
  db = await createMigratedDatabase('ob_reply');
  boss = createBoss(db.url, { max: 1 });
  sb = createBotApiSandbox({ limits: { privateChat: { count: 20, windowMs: 1000, burst: 1 } } });
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

async function start(register: RegisterHandlers): Promise<void> {
  const logger = testLogger();
  const writer = createOutboundReplyWriter({ defaults: { botId: BOT } });
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
  const limiter = createOutboundRateLimiter({
    ...OUTBOUND_RATE_LIMITS_DEFAULT,
    perChat: { count: 20, windowMs: 1000 },
  });
  worker = createWorker({
    pool: db.pool,
    boss,
    logger,
    databaseUrl: db.url,
    kinds: [
      createDispatchKind({ runner, handlerTimeoutMs: 5_000 }),
      createOutboundKind({ pool: db.pool, telegram, limiter, sendTimeoutMs: 5_000 }),
    ],
    config: { concurrency: 4, staleAfterMs: 30_000, retry: { baseMs: 20, capMs: 50, maxAttempts: 3 } },
  });
  await worker.start();
}

/** Stores one message update as ingress would (inbox row + update.dispatch job). */
async function storeUpdate(chatId: number, text: string, reuse?: { updateId: number; epoch: number }): Promise<number> {
  const updateId = reuse?.updateId ?? ++updateSeq;
  const update = {
    update_id: updateId,
    message: {
      message_id: updateId,
      date: 1_700_000_000,
      chat: { id: chatId, type: 'private', first_name: 'U' },
      from: { id: chatId, is_bot: false, first_name: 'U' },
      text,
    },
  };
  await withTransaction(db.pool, async (c) => {
    const jobId = newJobId();
    const { rows } = await c.query(
      `insert into relay.inbox (bot_id, update_id, update_type, chat_id, payload, job_id, update_epoch)
       values ($1, $2, 'message', $3, $4, $5, $6) returning id`,
      [BOT, updateId, chatId, update, jobId, reuse?.epoch ?? 0],
    );
    await enqueueJobs(c, boss, QUEUES.dispatch, [{ id: jobId, data: { id: Number(rows[0].id) } }]);
  });
  return updateId;
}

const inboxState = async (updateId: number) =>
  (await db.pool.query('select state from relay.inbox where update_id = $1', [updateId])).rows[0]?.state;
const replies = async (updateId: number) =>
  (
    await db.pool.query(
      `select msg_id, kind, state, text, source_update_id::int as src, send_options from relay.outbound where source_update_id = $1 order by id`,
      [updateId],
    )
  ).rows;
const sentTo = (chat: number) =>
  sb
    .sent(TOKEN)
    .filter((m) => m.chat_id === chat)
    .map((m) => m.text);

describe('handler replies through the outbound relay', () => {
  it('are enqueued with the handled update (update:{bot}:{update_id}:{n}) and sent in order', async () => {
    await start((bot) => {
      bot.on('text', async (ctx) => {
        await ctx.reply(`echo: ${ctx.message.text}`);
        await ctx.replyWithHTML('<b>second</b>', {
          reply_parameters: { message_id: ctx.message.message_id, allow_sending_without_reply: true },
        });
      });
    });
    const u = await storeUpdate(31, 'hello');
    await waitFor(async () => (await inboxState(u)) === 'handled', { what: 'handled' });
    await waitFor(
      async () => (await replies(u)).every((r) => r.state === 'delivered') && (await replies(u)).length === 2,
      { what: 'replies delivered' },
    );
    expect(await replies(u)).toEqual([
      {
        msg_id: `update:${BOT}:${u}:1`,
        kind: 'reply',
        state: 'delivered',
        text: 'echo: hello',
        src: u,
        send_options: null,
      },
      {
        msg_id: `update:${BOT}:${u}:2`,
        kind: 'reply',
        state: 'delivered',
        text: '<b>second</b>',
        src: u,
        send_options: { reply_parameters: { message_id: u, allow_sending_without_reply: true } },
      },
    ]);
    expect(sentTo(31)).toEqual(['echo: hello', '<b>second</b>']);
  });

  it('an update under a reused update_id gets reply ids of its own: the replies of both are sent', async () => {
    await start((bot) => {
      bot.on('text', (ctx) => ctx.reply(`echo: ${ctx.message.text}`));
    });
    const u = await storeUpdate(34, 'before the reset');
    await waitFor(async () => (await replies(u)).some((r) => r.state === 'delivered'), { what: 'first reply sent' });
    // a week later Telegram serves another update under the same id (ingress stores it as epoch 1)
    await storeUpdate(34, 'after the reset', { updateId: u, epoch: 1 });
    await waitFor(async () => (await replies(u)).filter((r) => r.state === 'delivered').length === 2, {
      what: 'both replies sent',
    });
    expect((await replies(u)).map((r) => [r.msg_id, r.text])).toEqual([
      [`update:${BOT}:${u}:1`, 'echo: before the reset'],
      [`update:${BOT}:${u}/1:1`, 'echo: after the reset'],
    ]);
    expect(sentTo(34)).toEqual(['echo: before the reset', 'echo: after the reset']);
  });

  it("a handler retried after replying sends each reply once (the failed attempt's replies are discarded)", async () => {
    let calls = 0;
    await start((bot) => {
      bot.on('text', async (ctx) => {
        calls++;
        await ctx.reply(`attempt ${calls}`);
        if (calls === 1) throw new Error('flaky handler');
      });
    });
    const u = await storeUpdate(32, 'x');
    await waitFor(async () => (await inboxState(u)) === 'handled', { what: 'handled' });
    await waitFor(async () => (await replies(u))[0]?.state === 'delivered', { what: 'reply delivered' });
    expect(calls).toBe(2);
    expect((await replies(u)).map((r) => [r.msg_id, r.text])).toEqual([[`update:${BOT}:${u}:1`, 'attempt 2']]);
    expect(sentTo(32)).toEqual(['attempt 2']);
  });

  it('a handler that keeps failing sends no reply', async () => {
    await start((bot) => {
      bot.on('text', async (ctx) => {
        await ctx.reply('never sent');
        throw new Error('always fails');
      });
    });
    const u = await storeUpdate(33, 'x');
    await waitFor(async () => (await inboxState(u)) === 'failed', { what: 'failed' });
    expect(await replies(u)).toEqual([]);
    expect(sentTo(33)).toEqual([]);
  });

  it("escape hatch: callApiDirect sends at once and returns Telegram's answer; ctx.reply stays relayed", async () => {
    await start((bot) => {
      bot.on('text', async (ctx) => {
        const sent = await callApiDirect<{ message_id: number }>(ctx, 'sendMessage', {
          chat_id: ctx.chat.id,
          text: 'direct',
        });
        await ctx.reply(`relayed after direct #${sent.message_id}`);
      });
    });
    const u = await storeUpdate(35, 'x');
    await waitFor(async () => (await replies(u))[0]?.state === 'delivered', { what: 'reply delivered' });
    const [direct] = sb.sent(TOKEN).filter((m) => m.chat_id === 35 && m.text === 'direct');
    expect(direct.message_id).toBeGreaterThan(0);
    expect((await replies(u)).map((r) => r.text)).toEqual([`relayed after direct #${direct.message_id}`]); // only the relayed one is a row
    expect(sentTo(35)).toEqual(['direct', `relayed after direct #${direct.message_id}`]);
  });

  it('writing the same replies again (a replayed update) enqueues nothing twice, whatever the handler said', async () => {
    const writer = createOutboundReplyWriter({ defaults: { botId: BOT } });
    const reply = (text: string) => ({
      msgId: `update:${BOT}:9999:1`,
      botId: BOT,
      chatId: '34',
      text,
      sourceUpdateId: 9999,
      payload: { chat_id: 34, text },
    });
    await withTransaction(db.pool, (c) => writer(c, [reply('first')]));
    await withTransaction(db.pool, (c) => writer(c, [reply('first')]));
    await withTransaction(db.pool, (c) => writer(c, [reply('said differently on replay')]));
    expect((await replies(9999)).map((r) => r.text)).toEqual(['first']);
  });
});
