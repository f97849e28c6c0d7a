/**
 * REPLY_MODE=outbound through a real telegraf bot: every relayed Bot API call a handler makes
 * (ctx.reply, ctx.replyWithPhoto, ctx.telegram.editMessageText, ctx.answerCbQuery, the automatic
 * callback answer, ctx.telegram.callApi) is captured in call order, with its files read at the call,
 * and only reads and sendChatAction reach the Bot API (the sandbox, a real HTTP server, counts every
 * request). The writer records what it is given: the outbound tables are the outbound relay's tests.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import fc from 'fast-check';
import { Input } from 'telegraf';
import { createBotApiSandbox, type BotApiSandbox } from '../../../libs/sandbox';
import { silentLogger } from '../../../libs/observability/logger';
import { loadConfig } from '../../../libs/config';
import {
  createDispatchKindFromConfig,
  createOutboundReplySink,
  createUpdateRunner,
  InvalidReplyError,
  resolveBotHandlers,
  type DispatchContext,
  type OutboundReply,
  type OutboundReplyWriter,
  type RegisterHandlers,
  type UpdateRunner,
} from '../../../libs/dispatch';
import { RELAYED_METHODS } from '../../../libs/telegram/methods';
import { isPlaceholder } from '../../../libs/telegram/placeholders';
import { BOT_ID, makeUpdate, TOKEN } from './helpers';

const CHAT = 5150;
const LIMIT = 1024;
const JPEG = Buffer.from('not really a jpeg, but bytes');

let sandbox: BotApiSandbox;
let dir: string;
beforeAll(async () => {
  sandbox = createBotApiSandbox({ limits: { enabled: false } });
  await sandbox.start();
  dir = mkdtempSync(join(tmpdir(), 'relayed-calls-'));
});
afterAll(async () => {
  await sandbox?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** A runner whose outbound sink records the attempt's captured calls when it commits. */
async function outboundRunner(register: RegisterHandlers) {
  const written: OutboundReply[][] = [];
  const write: OutboundReplyWriter = (_client, replies) => (written.push(replies), Promise.resolve());
  const runner: UpdateRunner = createUpdateRunner({
    token: TOKEN,
    botId: BOT_ID,
    apiRoot: sandbox.url,
    handlers: resolveBotHandlers({ register }),
    replySink: createOutboundReplySink({ write, maxUploadBytes: LIMIT }),
    logger: silentLogger(),
  });
  await runner.start();
  /** Runs one update and commits it when handled; returns the outcome and what was written. */
  const run = async (update: unknown) => {
    const before = botApiCalls().length;
    const outcome = await runner.runUpdate(update);
    if (outcome.kind === 'handled') await outcome.commit({} as never);
    return { outcome, replies: written.splice(0).flat(), direct: botApiCalls().slice(before) };
  };
  return { runner, run };
}

/** Every request the bot made to the Bot API, as method names. */
const botApiCalls = () => sandbox.calls(TOKEN).map((c) => c.method);

const callback = (data: string) =>
  sandbox.injectCallbackQuery(TOKEN, { chatId: CHAT, data }) as unknown as Record<string, unknown> & {
    update_id: number;
  };

const msgId = (update: { update_id: number }, n: number) => `update:${BOT_ID}:${update.update_id}:${n}`;

/** telegraf types callApi per method; a handler may call it with any name and payload. */
const callApi = (ctx: DispatchContext, method: string, payload: unknown): Promise<unknown> => {
  const fn: unknown = Reflect.get(ctx.telegram, 'callApi');
  if (typeof fn !== 'function') throw new TypeError('telegraf Telegram has no callApi');
  return Promise.resolve(Reflect.apply(fn, ctx.telegram, [method, payload]));
};

describe('a handler’s relayed calls are captured in call order', () => {
  it('reply → replyWithPhoto → editMessageText(placeholder) → answerCbQuery → sendChatAction: four captured, one direct call', async () => {
    const seen: Record<string, unknown> = {};
    const { run } = await outboundRunner((bot) => {
      bot.action('go', async (ctx) => {
        const sent = await ctx.reply('working…');
        const photo = await ctx.replyWithPhoto(Input.fromBuffer(JPEG, 'cat.jpg'), { caption: 'a cat' });
        const edited = await ctx.telegram.editMessageText(ctx.chat!.id, sent.message_id, undefined, 'done');
        const answered = await ctx.answerCbQuery('ok');
        await ctx.sendChatAction('typing');
        Object.assign(seen, { sent, photo, edited, answered });
      });
    });
    const update = callback('go');
    const { outcome, replies, direct } = await run(update);

    expect(outcome).toMatchObject({ kind: 'handled', via: 'handler' });
    expect(direct).toEqual(['sendChatAction']);
    expect(replies.map((r) => [r.msgId, r.method, r.chatId])).toEqual([
      [msgId(update, 1), 'sendMessage', String(CHAT)],
      [msgId(update, 2), 'sendPhoto', String(CHAT)],
      [msgId(update, 3), 'editMessageText', String(CHAT)],
      [msgId(update, 4), 'answerCallbackQuery', ''],
    ]);
    const [reply, photo, edit, answer] = replies;
    const sent = seen.sent as { message_id: number };
    expect(isPlaceholder(sent.message_id)).toBe(true);
    expect(reply).toMatchObject({ text: 'working…', placeholders: [sent.message_id] });
    expect(photo.params).toEqual({ photo: 'attach://file1', caption: 'a cat' });
    expect(photo.uploads).toEqual([{ part: 'file1', filename: 'cat.jpg', bytes: JPEG }]);
    expect(photo.placeholders).toEqual([(seen.photo as { message_id: number }).message_id]);
    // the edit names the first message's placeholder: the outbound worker resolves it at send
    expect(edit.params).toEqual({ message_id: sent.message_id, text: 'done' });
    expect(seen.edited).toMatchObject({ message_id: sent.message_id, text: 'done', tg_relay_msg_id: msgId(update, 3) });
    const query = update.callback_query as { id: string };
    expect(answer.params).toEqual({ callback_query_id: query.id, text: 'ok' });
    expect(seen.answered).toBe(true);
    expect(sandbox.answeredCallbacks(TOKEN)).toEqual([]);
  });

  it('the automatic callback answer is captured too, and only when the handler did not answer', async () => {
    const { run } = await outboundRunner((bot, dispatch) => {
      dispatch.autoAnswerCallbacks({ text: 'auto' });
      bot.action('silent', (ctx) => ctx.reply('pressed'));
      bot.action('answers', (ctx) => ctx.answerCbQuery('mine'));
    });
    const silent = await run(callback('silent'));
    expect(silent.replies.map((r) => [r.method, r.params?.text ?? r.text])).toEqual([
      ['sendMessage', 'pressed'],
      ['answerCallbackQuery', 'auto'],
    ]);
    const answers = await run(callback('answers'));
    expect(answers.replies.map((r) => [r.method, r.params?.text])).toEqual([['answerCallbackQuery', 'mine']]);
    expect([...silent.direct, ...answers.direct]).toEqual([]);
  });

  it('stream and path uploads through ctx are read at the call', async () => {
    const path = join(dir, 'notes.txt');
    writeFileSync(path, 'file on disk');
    const { run } = await outboundRunner((bot) => {
      bot.on('text', async (ctx) => {
        await ctx.replyWithDocument(Input.fromLocalFile(path));
        await ctx.replyWithVoice(
          Input.fromReadableStream(Readable.from([Buffer.from('og'), Buffer.from('g')]), 'v.ogg'),
        );
        await ctx.replyWithMediaGroup([
          { type: 'photo', media: Input.fromBuffer(Buffer.from('p1')) },
          { type: 'photo', media: Input.fromURLStream('https://example.com/p2.jpg') },
        ]);
      });
    });
    const { outcome, replies, direct } = await run(makeUpdate(9001, CHAT));
    expect(outcome.kind).toBe('handled');
    expect(direct).toEqual([]);
    expect(
      replies.map((r) => [r.method, r.params, r.uploads?.map((u) => [u.part, u.filename, u.bytes.toString()])]),
    ).toEqual([
      ['sendDocument', { document: 'attach://file1' }, [['file1', 'notes.txt', 'file on disk']]],
      ['sendVoice', { voice: 'attach://file1' }, [['file1', 'v.ogg', 'ogg']]],
      [
        'sendMediaGroup',
        {
          media: [
            { type: 'photo', media: 'attach://file1' },
            { type: 'photo', media: 'https://example.com/p2.jpg' },
          ],
        },
        [['file1', 'photo.jpg', 'p1']],
      ],
    ]);
    expect(replies[2].placeholders).toHaveLength(2);
  });

  it('over-limit and broken inputs are refused on their own call; the handler goes on, and an uncaught one fails the update at once', async () => {
    const refusals: string[] = [];
    const { run } = await outboundRunner((bot) => {
      const attempt = async (p: Promise<unknown>) =>
        p.then(
          () => refusals.push('captured'),
          (err: unknown) => refusals.push(err instanceof InvalidReplyError ? err.message : `other: ${String(err)}`),
        );
      bot.hears('caught', async (ctx) => {
        await attempt(ctx.replyWithPhoto(Input.fromBuffer(Buffer.alloc(LIMIT + 1, 1))));
        await attempt(ctx.replyWithDocument(Input.fromLocalFile(join(dir, 'missing.pdf'))));
        const failing = new Readable({
          read() {
            this.destroy(new Error('source broke'));
          },
        });
        await attempt(ctx.replyWithAudio(Input.fromReadableStream(failing)));
        await ctx.reply('could not send those');
      });
      bot.hears('uncaught', async (ctx) => {
        await ctx.reply('first');
        await ctx.replyWithPhoto(Input.fromBuffer(Buffer.alloc(LIMIT + 1, 1)));
      });
    });
    const caught = await run(makeUpdate(9002, CHAT, 'caught'));
    expect(caught.outcome.kind).toBe('handled');
    expect(refusals).toEqual([
      expect.stringMatching(
        /^reply 1 \(sendPhoto\) refused before it was queued: photo is over the upload limit: the files of one call may total 1024 bytes \(OUTBOUND_MAX_UPLOAD\)$/,
      ),
      'reply 1 (sendDocument) refused before it was queued: document source file cannot be read (ENOENT)',
      'reply 1 (sendAudio) refused before it was queued: audio source stream failed (Error)',
    ]);
    expect(caught.replies.map((r) => [r.msgId, r.text])).toEqual([[`update:${BOT_ID}:9002:1`, 'could not send those']]);

    const uncaught = await run(makeUpdate(9003, CHAT, 'uncaught'));
    expect(uncaught.outcome).toMatchObject({ kind: 'retry', terminal: true, info: { code: 'RELAY_INVALID_REPLY' } });
    expect(uncaught.replies).toEqual([]);
    expect([...caught.direct, ...uncaught.direct]).toEqual([]);
  });
});

describe('the worker composition', () => {
  it('builds the outbound sink with OUTBOUND_MAX_UPLOAD from the configuration', async () => {
    const config = loadConfig({
      BOT_HANDLERS: 'test/integration/dispatch/fixtures/upload-bot.ts',
      TELEGRAM_BOT_TOKEN: TOKEN,
      TELEGRAM_API_ROOT: sandbox.url,
      REPLY_MODE: 'outbound',
      OUTBOUND_MAX_UPLOAD: '10',
    });
    const kind = await createDispatchKindFromConfig(config, { logger: silentLogger() });
    try {
      await kind.runner.start();
      const outcome = await kind.runner.runUpdate(makeUpdate(9100, CHAT, '11'));
      expect(outcome).toMatchObject({ kind: 'retry', terminal: true, info: { code: 'RELAY_INVALID_REPLY' } });
      expect(outcome.kind === 'retry' && outcome.info.message).toMatch(
        /document is over the upload limit: the files of one call may total 10 bytes \(OUTBOUND_MAX_UPLOAD\)/,
      );
    } finally {
      await kind.close?.();
    }
  });
});

describe('property: arbitrary payloads for a relayed method', () => {
  const file = fc.oneof(
    fc.uint8Array({ maxLength: 2 * LIMIT }).map((b) => Input.fromBuffer(Buffer.from(b))),
    fc
      .array(fc.uint8Array({ maxLength: 600 }), { maxLength: 3 })
      .map((c) => Input.fromReadableStream(Readable.from(c.map((b) => Buffer.from(b))))),
    fc.string({ maxLength: 8 }).map((s) => Input.fromLocalFile(join(dir, 'nothing-here', s))),
    fc.record({ source: fc.anything() }),
    fc.record({ url: fc.anything() }),
  );
  const value = fc.oneof(
    fc.anything({ withBigInt: true, withDate: true, withMap: true, withSet: true, withTypedArray: true }),
    file,
    fc.array(fc.record({ type: fc.constantFrom('photo', 'video'), media: fc.oneof(file, fc.string()) }), {
      maxLength: 3,
    }),
  );
  const key = fc.oneof(
    fc.constantFrom('chat_id', 'photo', 'document', 'media', 'thumbnail', 'caption', 'message_id', 'inline_message_id'),
    fc.string({ maxLength: 12 }),
  );

  it('never throw anything but InvalidReplyError and never reach the Bot API', async () => {
    let payload: Record<string, unknown> = {};
    let method = 'sendMessage';
    let outcome: unknown;
    const { run } = await outboundRunner((bot) => {
      bot.on('message', async (ctx) => {
        outcome = await callApi(ctx, method, payload).then(
          () => 'captured',
          (err: unknown) => err,
        );
      });
    });
    let updateId = 20_000;
    const tally = { captured: 0, refused: 0 };
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...RELAYED_METHODS), fc.dictionary(key, value, { maxKeys: 5 }), async (m, p) => {
        method = m;
        payload = p;
        outcome = undefined;
        const { outcome: result, replies, direct } = await run(makeUpdate(++updateId, CHAT));
        expect(result.kind).toBe('handled');
        if (outcome !== 'captured') expect(outcome).toBeInstanceOf(InvalidReplyError);
        expect(replies.map((r) => r.method)).toEqual(outcome === 'captured' ? [m] : []);
        expect(direct).toEqual([]);
        tally[outcome === 'captured' ? 'captured' : 'refused']++;
      }),
      { numRuns: 150 },
    );
    // both sides of the property were exercised
    expect(tally.captured).toBeGreaterThan(0);
    expect(tally.refused).toBeGreaterThan(0);
  });
});
