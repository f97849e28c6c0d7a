/**
 * The outcome contract of one dispatch attempt (`runUpdate`), row by row, against the real Bot API
 * sandbox over HTTP. No database: the inbox/job side is covered in test/integration/dispatch.
 */
import { Composer } from 'telegraf';
import { createBotApiSandbox, type BotApiSandbox } from '../../../libs/sandbox';
import { silentLogger } from '../../../libs/observability/logger';
import {
  callApiDirect,
  CatchAllErrorHandlerError,
  createDirectReplySink,
  createOutboundReplySink,
  createUpdateRunner,
  DispatchClosedError,
  HandlerTimeoutError,
  resolveBotHandlers,
  type OutboundReply,
  type RegisterHandlers,
  type ReplySink,
  type UpdateRunner,
} from '../../../libs/dispatch';
import echoBot from '../../../examples/echo-bot';
import { isPlaceholder } from '../../../libs/telegram/placeholders';
import { waitFor } from '../../support/wait-for';

const TOKEN = '2000000001:dispatch-unit-test-token';
const CHAT = 4242;

class Recoverable extends Error {}
class SubRecoverable extends Recoverable {}
class Unrelated extends Error {}

let sandbox: BotApiSandbox;
const runners: UpdateRunner[] = [];

beforeAll(async () => {
  // Flood control is the outbound relay's concern; here several replies to one chat must just work.
  sandbox = createBotApiSandbox({ limits: { enabled: false } });
  await sandbox.start();
});
afterAll(async () => {
  await sandbox.stop();
});
beforeEach(() => sandbox.reset());

async function runnerFor(register: RegisterHandlers, opts: { sink?: ReplySink } = {}): Promise<UpdateRunner> {
  const runner = createUpdateRunner({
    token: TOKEN,
    botId: TOKEN.split(':')[0],
    apiRoot: sandbox.url,
    handlers: resolveBotHandlers({ register }),
    replySink: opts.sink ?? createDirectReplySink(),
    logger: silentLogger(),
  });
  await runner.start();
  runners.push(runner);
  return runner;
}

const message = (text: string, chatId = CHAT) => sandbox.injectMessage(TOKEN, { chatId, text });
const sentTexts = () => sandbox.sent(TOKEN).map((s) => s.text);

describe('runUpdate: the outcome contract', () => {
  it('a handler that succeeds → handled (its reply reached the Bot API)', async () => {
    const runner = await runnerFor(echoBot);
    const outcome = await runner.runUpdate(message('hello'));
    expect(outcome).toMatchObject({ kind: 'handled', via: 'handler' });
    expect(sentTexts()).toEqual(['hello']);
  });

  it('no matching route → handled, nothing sent', async () => {
    const runner = await runnerFor((bot) => void bot.command('only', (ctx) => ctx.reply('x')));
    const outcome = await runner.runUpdate(message('not a command'));
    expect(outcome.kind).toBe('handled');
    expect(sandbox.sent(TOKEN)).toEqual([]);
  });

  it('an update type the bot has never heard of → handled', async () => {
    const runner = await runnerFor(echoBot);
    const outcome = await runner.runUpdate({ update_id: 1, some_future_update: { chat: { id: CHAT } } });
    expect(outcome.kind).toBe('handled');
  });

  it('a middleware that deliberately stops the update (no next()) → handled, later handlers not run', async () => {
    let reached = false;
    const runner = await runnerFor((bot) => {
      bot.use(() => Promise.resolve()); // e.g. a rate limiter rejecting the update
      bot.on('text', () => void (reached = true));
    });
    expect((await runner.runUpdate(message('hi'))).kind).toBe('handled');
    expect(reached).toBe(false);
  });

  it('a handler that throws → retry, with the error class and message', async () => {
    const runner = await runnerFor(
      (bot) =>
        void bot.on('text', () => {
          throw new Unrelated('boom');
        }),
    );
    const outcome = await runner.runUpdate(message('hi'));
    expect(outcome).toMatchObject({
      kind: 'retry',
      timedOut: false,
      aborted: false,
      info: { errorClass: 'Unrelated', message: 'boom' },
    });
  });

  it('a middleware that throws → retry', async () => {
    const runner = await runnerFor((bot) => {
      bot.use(() => Promise.reject(new TypeError('middleware broke')));
      bot.on('text', (ctx) => ctx.reply('never'));
    });
    const outcome = await runner.runUpdate(message('hi'));
    expect(outcome).toMatchObject({ kind: 'retry', info: { errorClass: 'TypeError', message: 'middleware broke' } });
    expect(sandbox.sent(TOKEN)).toEqual([]);
  });

  it('a failing Bot API call inside the handler → retry with the Telegram error', async () => {
    sandbox.scriptChatError(TOKEN, CHAT, 'blocked');
    const runner = await runnerFor(echoBot);
    const outcome = await runner.runUpdate(message('hi'));
    expect(outcome).toMatchObject({ kind: 'retry', info: { errorClass: 'TelegramError', code: '403' } });
    expect(outcome.kind === 'retry' && outcome.info.message).toContain('Forbidden: bot was blocked by the user');
  });

  it('an error handler registered for the error class that returns "handled" → handled', async () => {
    const runner = await runnerFor((bot, dispatch) => {
      bot.on('text', () => {
        throw new SubRecoverable('known condition');
      });
      dispatch.onError(Recoverable, async (err, ctx) => {
        await ctx.reply(`sorry: ${err.message}`);
        return 'handled';
      });
    });
    const outcome = await runner.runUpdate(message('hi'));
    expect(outcome).toMatchObject({
      kind: 'handled',
      via: 'error_handler',
      handledError: { errorClass: 'SubRecoverable' },
    });
    expect(sentTexts()).toEqual(['sorry: known condition']);
  });

  it('an error of another class is not offered to that error handler → retry', async () => {
    let offered = 0;
    const runner = await runnerFor((bot, dispatch) => {
      bot.on('text', () => {
        throw new Unrelated('not recoverable');
      });
      dispatch.onError(Recoverable, () => (offered++, Promise.resolve('handled')));
    });
    expect((await runner.runUpdate(message('hi'))).kind).toBe('retry');
    expect(offered).toBe(0);
  });

  it('an error handler that returns "unhandled" passes the error on; with no taker → retry', async () => {
    const seen: string[] = [];
    const runner = await runnerFor((bot, dispatch) => {
      bot.on('text', () => {
        throw new Recoverable('x');
      });
      dispatch.onError(Recoverable, () => (seen.push('first'), Promise.resolve('unhandled')));
      dispatch.onError(Unrelated, () => (seen.push('unrelated'), Promise.resolve('handled')));
    });
    expect((await runner.runUpdate(message('hi'))).kind).toBe('retry');
    expect(seen).toEqual(['first']);
  });

  it('"unhandled" then a later compatible handler returning "handled" → handled', async () => {
    const seen: string[] = [];
    const runner = await runnerFor((bot, dispatch) => {
      bot.on('text', () => {
        throw new SubRecoverable('x');
      });
      dispatch.onError(SubRecoverable, () => (seen.push('specific'), Promise.resolve('unhandled')));
      dispatch.onError(Recoverable, () => (seen.push('general'), Promise.resolve('handled')));
    });
    expect((await runner.runUpdate(message('hi'))).kind).toBe('handled');
    expect(seen).toEqual(['specific', 'general']);
  });

  it('an error handler that throws → retry with the new error (recovery failed), original kept', async () => {
    const runner = await runnerFor((bot, dispatch) => {
      bot.on('text', () => {
        throw new Recoverable('first failure');
      });
      dispatch.onError(Recoverable, () => Promise.reject(new Unrelated('recovery failed')));
    });
    const outcome = await runner.runUpdate(message('hi'));
    expect(outcome).toMatchObject({
      kind: 'retry',
      info: { errorClass: 'Unrelated', message: 'recovery failed' },
      originalError: { errorClass: 'Recoverable', message: 'first failure' },
    });
  });

  it('a catch-all error handler is refused at registration', async () => {
    const runner = createUpdateRunner({
      token: TOKEN,
      botId: '2000000001',
      apiRoot: sandbox.url,
      handlers: resolveBotHandlers({
        register: (_bot: unknown, dispatch: { onError: (c: unknown, h: unknown) => void }) =>
          dispatch.onError(Error, () => Promise.resolve('handled')),
      }),
      replySink: createDirectReplySink(),
      logger: silentLogger(),
    });
    await expect(runner.start()).rejects.toBeInstanceOf(CatchAllErrorHandlerError);
  });

  it('a handler past HANDLER_TIMEOUT → retry (timed out); its signal fired and a late reply is refused', async () => {
    let signalFired = false;
    let lateCall: unknown;
    const runner = await runnerFor(
      (bot) =>
        void bot.on('text', async (ctx) => {
          await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
          signalFired = ctx.signal.aborted;
          await new Promise((r) => setTimeout(r, 20)); // still running after the outcome was decided
          lateCall = await ctx.reply('too late').catch((e) => e);
        }),
    );
    const outcome = await runner.runUpdate(message('slow'), { timeoutMs: 100 });
    expect(outcome).toMatchObject({
      kind: 'retry',
      timedOut: true,
      info: { errorClass: 'HandlerTimeoutError', code: 'RELAY_HANDLER_TIMEOUT' },
    });
    expect(outcome.kind === 'retry' && outcome.error).toBeInstanceOf(HandlerTimeoutError);
    await waitFor(() => lateCall !== undefined, { what: 'the late reply attempt' });
    expect(signalFired).toBe(true);
    expect(lateCall).toBeInstanceOf(DispatchClosedError);
    expect(sandbox.sent(TOKEN)).toEqual([]);
  });

  it('a timed-out handler is not offered to error handlers (it is still running)', async () => {
    let offered = 0;
    const runner = await runnerFor((bot, dispatch) => {
      bot.on(
        'text',
        (ctx) =>
          new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(new Recoverable('aborted')))),
      );
      dispatch.onError(Recoverable, () => (offered++, Promise.resolve('handled')));
    });
    expect(await runner.runUpdate(message('slow'), { timeoutMs: 50 })).toMatchObject({ kind: 'retry', timedOut: true });
    await new Promise((r) => setTimeout(r, 20));
    expect(offered).toBe(0);
  });

  it('an abort from outside (worker stopping) → retry (aborted), the handler sees its signal', async () => {
    let sawAbort = false;
    const runner = await runnerFor(
      (bot) =>
        void bot.on(
          'text',
          (ctx) =>
            new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => ((sawAbort = true), resolve()))),
        ),
    );
    const ctl = new AbortController();
    setTimeout(() => ctl.abort(new Error('stopping')), 30);
    const outcome = await runner.runUpdate(message('x'), { signal: ctl.signal, timeoutMs: 5_000 });
    expect(outcome).toMatchObject({
      kind: 'retry',
      aborted: true,
      timedOut: false,
      info: { errorClass: 'DispatchAbortedError' },
    });
    expect(sawAbort).toBe(true);
  });
});

describe('callback queries and the automatic answer', () => {
  it('the example bot answers its inline-keyboard callback and replies', async () => {
    const runner = await runnerFor(echoBot);
    expect((await runner.runUpdate(message('/start'))).kind).toBe('handled');
    const keyboard = sandbox.sent(TOKEN)[0];
    expect(keyboard.text).toMatch(/^Hello, /);
    expect(JSON.stringify(keyboard.reply_markup)).toContain('"callback_data":"like"');
    const cb = sandbox.injectCallbackQuery(TOKEN, { chatId: CHAT, data: 'like', messageId: keyboard.message_id });
    expect((await runner.runUpdate(cb)).kind).toBe('handled');
    expect(sandbox.answeredCallbacks(TOKEN)).toEqual([{ callback_query_id: cb.callback_query!.id, text: 'Thanks!' }]);
    expect(sentTexts()).toContain('You pressed like.');
  });

  it('opted in: a callback the handlers did not answer is answered after they succeed', async () => {
    const runner = await runnerFor((bot, dispatch) => {
      bot.action('noop', () => undefined);
      dispatch.autoAnswerCallbacks({ text: 'ok' });
    });
    const cb = sandbox.injectCallbackQuery(TOKEN, { chatId: CHAT, data: 'noop' });
    expect((await runner.runUpdate(cb)).kind).toBe('handled');
    expect(sandbox.answeredCallbacks(TOKEN)).toEqual([{ callback_query_id: cb.callback_query!.id, text: 'ok' }]);
  });

  it('not opted in: no automatic answer', async () => {
    const runner = await runnerFor((bot) => void bot.action('noop', () => undefined));
    const cb = sandbox.injectCallbackQuery(TOKEN, { chatId: CHAT, data: 'noop' });
    expect((await runner.runUpdate(cb)).kind).toBe('handled');
    expect(sandbox.answeredCallbacks(TOKEN)).toEqual([]);
  });

  it('the automatic answer is not sent when the handler failed', async () => {
    const runner = await runnerFor((bot, dispatch) => {
      bot.action('noop', () => {
        throw new Unrelated('handler failed');
      });
      dispatch.autoAnswerCallbacks();
    });
    const cb = sandbox.injectCallbackQuery(TOKEN, { chatId: CHAT, data: 'noop' });
    expect((await runner.runUpdate(cb)).kind).toBe('retry');
    expect(sandbox.answeredCallbacks(TOKEN)).toEqual([]);
  });

  it('a failing automatic answer → retry, through the same error handlers', async () => {
    const seen: string[] = [];
    const runner = await runnerFor((bot, dispatch) => {
      bot.action('noop', () => undefined);
      dispatch.autoAnswerCallbacks();
      dispatch.onError(Unrelated, () => (seen.push('unrelated'), Promise.resolve('handled')));
    });
    // A callback query the sandbox never opened: answerCallbackQuery answers 400 "query is too old".
    const cb = {
      update_id: 77,
      callback_query: {
        id: '999',
        from: { id: CHAT, is_bot: false, first_name: 'U' },
        chat_instance: '1',
        data: 'noop',
        message: { message_id: 1, date: 1, chat: { id: CHAT, type: 'private' } },
      },
    };
    const outcome = await runner.runUpdate(cb);
    expect(outcome).toMatchObject({ kind: 'retry', info: { errorClass: 'TelegramError', code: '400' } });
    expect(seen).toEqual([]);
  });
});

describe('the bot instance', () => {
  it('calls getMe once at start, never per update, and never polls', async () => {
    const runner = await runnerFor(echoBot);
    for (let i = 0; i < 5; i++) await runner.runUpdate(message(`m${i}`));
    expect(sandbox.calls(TOKEN, { method: 'getMe' })).toHaveLength(1);
    expect(sandbox.calls(TOKEN, { method: 'getUpdates' })).toHaveLength(0);
    expect(runner.botInfo()?.username).toBe('sandbox_2000000001_bot');
    expect((runner.bot.telegram as unknown as { options: { webhookReply: boolean } }).options.webhookReply).toBe(false);
  });

  it('handlers registered as a Composer (not a register function) run too', async () => {
    const composer = new Composer();
    composer.on('text', (ctx) => ctx.reply(`composer: ${ctx.message.text}`));
    const runner = createUpdateRunner({
      token: TOKEN,
      botId: '2000000001',
      apiRoot: sandbox.url,
      handlers: resolveBotHandlers({ default: composer }),
      replySink: createDirectReplySink(),
      logger: silentLogger(),
    });
    await runner.start();
    expect((await runner.runUpdate(message('x'))).kind).toBe('handled');
    expect(sentTexts()).toEqual(['composer: x']);
  });

  it('runUpdate before start → retry, not a crash', async () => {
    const runner = createUpdateRunner({
      token: TOKEN,
      botId: '2000000001',
      apiRoot: sandbox.url,
      handlers: resolveBotHandlers({ register: echoBot }),
      replySink: createDirectReplySink(),
      logger: silentLogger(),
    });
    expect((await runner.runUpdate(message('x'))).kind).toBe('retry');
    expect(sandbox.calls(TOKEN, { method: 'getMe' })).toHaveLength(0);
  });
});

describe('the reply seam', () => {
  function outboundSink() {
    const written: OutboundReply[][] = [];
    const sink = createOutboundReplySink({ write: (_client, replies) => (written.push(replies), Promise.resolve()) });
    return { sink, written };
  }

  it('outbound mode captures ctx.reply and bot.telegram.sendMessage; commit writes them with deterministic ids', async () => {
    const { sink, written } = outboundSink();
    const runner = await runnerFor(
      (bot) =>
        void bot.on('text', async (ctx) => {
          const placeholder = await ctx.reply(`echo: ${ctx.message.text}`, { parse_mode: 'HTML' });
          expect(isPlaceholder(placeholder.message_id)).toBe(true);
          await bot.telegram.sendMessage(ctx.chat.id, 'second');
          await ctx.sendChatAction('typing'); // not captured: goes straight to the Bot API
        }),
      { sink },
    );
    const update = message('hi');
    const outcome = await runner.runUpdate(update);
    expect(outcome.kind).toBe('handled');
    expect(sandbox.sent(TOKEN)).toEqual([]);
    expect(sandbox.calls(TOKEN, { method: 'sendChatAction' })).toHaveLength(1);
    expect(written).toEqual([]);
    if (outcome.kind === 'handled') await outcome.commit({} as never);
    expect(written).toHaveLength(1);
    expect(written[0].map((r) => [r.msgId, r.chatId, r.text, r.parseMode ?? null])).toEqual([
      [`update:2000000001:${update.update_id}:1`, String(CHAT), 'echo: hi', 'HTML'],
      [`update:2000000001:${update.update_id}:2`, String(CHAT), 'second', null],
    ]);
  });

  it('outbound mode: a failed attempt has nothing to commit (its replies are discarded)', async () => {
    const { sink, written } = outboundSink();
    const runner = await runnerFor(
      (bot) =>
        void bot.on('text', async (ctx) => {
          await ctx.reply('partial');
          throw new Unrelated('after the reply');
        }),
      { sink },
    );
    const outcome = await runner.runUpdate(message('hi'));
    expect(outcome.kind).toBe('retry');
    expect('commit' in outcome).toBe(false);
    expect(written).toEqual([]);
    expect(sandbox.sent(TOKEN)).toEqual([]);
  });

  it('direct mode: bot.telegram used inside a handler goes through the attempt (refused once it is over)', async () => {
    let captured: ((text: string) => Promise<unknown>) | undefined;
    const runner = await runnerFor(
      (bot) =>
        void bot.on('text', async (ctx) => {
          await bot.telegram.sendMessage(ctx.chat.id, 'inside');
          captured = (text) => ctx.telegram.sendMessage(ctx.chat.id, text);
        }),
    );
    expect((await runner.runUpdate(message('hi'))).kind).toBe('handled');
    expect(sentTexts()).toEqual(['inside']);
    await expect(captured!('after')).rejects.toBeInstanceOf(DispatchClosedError);
    // outside any dispatch, bot.telegram is an ordinary client
    await runner.bot.telegram.sendMessage(CHAT, 'outside');
    expect(sentTexts()).toEqual(['inside', 'outside']);
  });

  it('callApiDirect bypasses outbound capture (real answer now), and is refused once the attempt is over', async () => {
    const { sink, written } = outboundSink();
    let late: (() => Promise<unknown>) | undefined;
    let directId = 0;
    const runner = await runnerFor(
      (bot) =>
        void bot.on('text', async (ctx) => {
          const sent = await callApiDirect<{ message_id: number }>(ctx, 'sendMessage', {
            chat_id: ctx.chat.id,
            text: 'direct',
          });
          directId = sent.message_id;
          await ctx.reply('relayed');
          late = () => callApiDirect(ctx, 'sendMessage', { chat_id: ctx.chat.id, text: 'late' });
        }),
      { sink },
    );
    const outcome = await runner.runUpdate(message('hi'));
    expect(outcome.kind).toBe('handled');
    expect(directId).toBeGreaterThan(0);
    expect(sentTexts()).toEqual(['direct']);
    if (outcome.kind === 'handled') await outcome.commit({} as never);
    expect(written[0].map((r) => r.text)).toEqual(['relayed']);
    await expect(late!()).rejects.toBeInstanceOf(DispatchClosedError);
  });
});
