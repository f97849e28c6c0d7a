/**
 * Every example as a user runs it: `tg-relay start` in sandbox mode with `BOT_HANDLERS=examples/<bot>.ts`,
 * driven only over the sandbox's HTTP control API (a user's message, a button press). What the bot
 * did must show in the sandbox chat and the call log (bytes of uploads included) and in
 * relay.outbound as delivered: each reply went through the outbound relay, not straight to the API.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { albumPhotos, PHOTO_URL, PIXEL_PNG } from '../../../examples/media-bot';
import { colourKeyboard } from '../../../examples/keyboard-bot';
import { createSandboxClient, SANDBOX_DEFAULT_TOKEN, type SandboxClient, type TgUpdate } from '../../../libs/sandbox';
import { exited, ROOT, runCli, startCli } from '../../support/cli';
import { createTestDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';

const TOKEN = SANDBOX_DEFAULT_TOKEN;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

interface OutboundRow {
  method: string;
  state: string;
  message_count: number;
}

interface Relay {
  sandbox: SandboxClient;
  sandboxUrl: string;
  /** Waits until the update is handled and its `replies` outbound rows are delivered. */
  settled(updateId: number, replies: number): Promise<OutboundRow[]>;
  /** Injects a user message and waits until the update is handled and its `replies` outbound rows delivered. */
  say(
    chatId: number,
    text: string,
    replies: number,
    fromId?: number,
  ): Promise<{ update: TgUpdate; rows: OutboundRow[] }>;
  press(
    chatId: number,
    data: string,
    messageId: number,
    replies: number,
  ): Promise<{ update: TgUpdate; rows: OutboundRow[] }>;
  /** What the bot put in one chat (sends and edits), in order. */
  chat(chatId: number): Promise<Array<{ method: string; message_id: number; text: string }>>;
  stop(): Promise<void>;
}

/** One database per example; a restart reuses it (the sessions and the cursor live there). */
async function startRelay(bot: string, databaseUrl: string, db: Client): Promise<Relay> {
  const proc = startCli(['start'], {
    DATABASE_URL: databaseUrl,
    BOT_HANDLERS: `examples/${bot}`,
    ADMIN_PORT: '0',
    SANDBOX_PORT: '0',
    SANDBOX_COLLECTOR_PORT: '0',
    POLL_TIMEOUT: '1s',
    LOG_LEVEL: 'warn',
  });
  let banner: string;
  try {
    banner = await waitFor(() => (/Ctrl-C stops everything/.test(proc.output()) ? proc.output() : null), {
      timeoutMs: 60_000,
      what: `the start banner of ${bot}`,
    });
  } catch (err) {
    proc.kill('SIGKILL');
    throw new Error(`${(err as Error).message}\n--- output ---\n${proc.output()}`, { cause: err });
  }
  expect(banner).toContain(`the bot (examples/${bot})`);
  const sandboxUrl = /TELEGRAM_API_ROOT=(\S+)/.exec(banner)![1];
  const sandbox = createSandboxClient(sandboxUrl);

  const settled = (updateId: number, replies: number) =>
    waitFor(
      async () => {
        const inbox = await db.query<{ state: string }>('select state from relay.inbox where update_id = $1', [
          updateId,
        ]);
        const out = await db.query<OutboundRow>(
          'select method, state, message_count from relay.outbound where source_update_id = $1 order by id',
          [updateId],
        );
        const done = inbox.rows[0]?.state === 'handled' && out.rows.length === replies;
        return done && out.rows.every((r) => r.state === 'delivered') ? out.rows : null;
      },
      { timeoutMs: 30_000, intervalMs: 100, what: `update ${updateId} handled, ${replies} replies delivered` },
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n--- output ---\n${proc.output()}`, { cause: err });
    });
  const run = async (update: TgUpdate, replies: number) => ({
    update,
    rows: await settled(update.update_id, replies),
  });

  return {
    sandbox,
    sandboxUrl,
    settled,
    say: async (chatId, text, replies, fromId) =>
      run(await sandbox.injectMessage(TOKEN, { chatId, text, fromId }), replies),
    press: async (chatId, data, messageId, replies) =>
      run(await sandbox.injectCallbackQuery(TOKEN, { chatId, data, messageId }), replies),
    chat: async (chatId) =>
      (await sandbox.sent(TOKEN))
        .filter((s) => s.resolved_chat_id === chatId)
        .map((s) => ({ method: s.method, message_id: s.message_id, text: s.text })),
    stop: async () => {
      proc.kill('SIGTERM');
      const code = await exited(proc);
      expect({ code, output: code.code === 0 ? '' : proc.output() }).toEqual({
        code: { code: 0, signal: null },
        output: '',
      });
    },
  };
}

/** The example's database and a connection to read relay.inbox and relay.outbound. */
function exampleDatabase() {
  const state: { url?: string; client?: Client; created?: Awaited<ReturnType<typeof createTestDatabase>> } = {};
  beforeAll(async () => {
    state.created = await createTestDatabase('ex');
    state.url = state.created.url;
    state.client = new Client({ connectionString: state.created.url });
    await state.client.connect();
  });
  afterAll(async () => {
    await state.client?.end();
    await state.created?.drop();
  });
  return state as { url: string; client: Client };
}

describe('examples in sandbox mode (tg-relay start, BOT_HANDLERS=examples/…)', () => {
  describe('media-bot.ts', () => {
    const db = exampleDatabase();
    it('uploads a photo, an album and a document with their bytes, and edits a caption', async () => {
      const relay = await startRelay('media-bot.ts', db.url, db.client);
      try {
        const photo = await relay.say(7001, '/photo', 1);
        expect(photo.rows).toEqual([{ method: 'sendPhoto', state: 'delivered', message_count: 1 }]);
        const album = await relay.say(7002, '/album', 1);
        expect(album.rows).toEqual([{ method: 'sendMediaGroup', state: 'delivered', message_count: 3 }]);
        const doc = await relay.say(7003, '/document', 1);
        expect(doc.rows).toEqual([{ method: 'sendDocument', state: 'delivered', message_count: 1 }]);
        const url = await relay.say(7005, '/url', 1);
        expect(url.rows).toEqual([{ method: 'sendPhoto', state: 'delivered', message_count: 1 }]);
        const caption = await relay.say(7004, '/caption', 2);
        expect(caption.rows.map((r) => [r.method, r.state])).toEqual([
          ['sendPhoto', 'delivered'],
          ['editMessageCaption', 'delivered'],
        ]);

        const byUrl = (await relay.sandbox.calls(TOKEN, 'sendPhoto')).filter((c) => c.params.chat_id === 7005);
        // a URL is passed on as is, nothing uploaded (Telegram downloads it)
        expect(byUrl.map((c) => [c.params.photo, c.files])).toEqual([[PHOTO_URL, undefined]]);
        const calls = (await relay.sandbox.calls(TOKEN)).filter((c) => c.method !== 'getMe' && c.files);
        const uploaded = (method: string) => calls.filter((c) => c.method === method);
        // what reached the sandbox is what the handler passed, byte for byte, after the round trip through the database
        expect(uploaded('sendPhoto').map((c) => [c.params.chat_id, c.files!.map((f) => f.sha256)])).toEqual([
          ['7001', [sha(PIXEL_PNG)]],
          ['7004', [sha(PIXEL_PNG)]],
        ]);
        const [group] = uploaded('sendMediaGroup');
        const media = group.params.media as Array<{ media: string }>;
        const byPart = new Map(group.files!.map((f) => [f.part, f.sha256]));
        expect(media.map((m) => byPart.get(m.media.replace(/^attach:\/\//, '')))).toEqual(albumPhotos().map(sha));
        const [document] = uploaded('sendDocument');
        expect(document.files![0]).toMatchObject({
          filename: 'media-bot.ts',
          sha256: sha(readFileSync(path.join(ROOT, 'examples/media-bot.ts'))),
        });

        expect((await relay.chat(7001)).map((m) => m.text)).toEqual(['[photo] From a Buffer']);
        expect((await relay.chat(7002)).map((m) => m.text)).toEqual([
          '[photo] An album of three',
          '[photo]',
          '[photo]',
        ]);
        expect((await relay.chat(7003)).map((m) => m.text)).toEqual(['[document] My source']);
        expect((await relay.chat(7005)).map((m) => m.text)).toEqual(['[photo] From a URL']);
        const [sent, edited] = await relay.chat(7004);
        // the edit named the message the relay sent (its placeholder id resolved to the real one)
        expect(edited).toEqual({
          method: 'editMessageCaption',
          message_id: sent.message_id,
          text: '[photo] After: caption edited',
        });
      } finally {
        await relay.stop();
      }
    }, 120_000);
  });

  describe('keyboard-bot.ts', () => {
    const db = exampleDatabase();
    it('a button press is answered and edits the menu; other text gets a reaction', async () => {
      const relay = await startRelay('keyboard-bot.ts', db.url, db.client);
      try {
        await relay.say(7101, '/menu', 1);
        const [menu] = await relay.chat(7101);
        expect(menu.text).toBe('Pick a colour');

        // the press as a user makes it from a shell: `tg-relay sandbox press`
        const cli = await runCli(
          ['sandbox', 'press', 'colour:green', '--message', String(menu.message_id), '--chat', '7101'],
          { SANDBOX_URL: relay.sandboxUrl },
        );
        expect({ code: cli.code, stderr: cli.stderr }).toEqual({ code: 0, stderr: '' });
        const [, updateId, queryId] = /^update_id=(\d+) callback_query_id=(\S+) /.exec(cli.stdout)!;
        const press = await relay.settled(Number(updateId), 2);
        expect(press.map((r) => r.method)).toEqual(['answerCallbackQuery', 'editMessageText']);
        expect(await relay.sandbox.answeredCallbacks(TOKEN)).toEqual([
          { callback_query_id: queryId, text: 'You picked green' },
        ]);
        expect((await relay.chat(7101))[1]).toEqual({
          method: 'editMessageText',
          message_id: menu.message_id,
          text: 'Colour: green',
        });
        const [edit] = await relay.sandbox.calls(TOKEN, 'editMessageText');
        expect(edit.params.reply_markup).toEqual(colourKeyboard('green').reply_markup);

        // a button no handler knows still stops the spinner (autoAnswerCallbacks)
        const stale = await relay.press(7101, 'colour:purple', menu.message_id, 1);
        expect(stale.rows.map((r) => r.method)).toEqual(['answerCallbackQuery']);

        const hello = await relay.say(7101, 'hello', 1);
        expect(hello.rows.map((r) => r.method)).toEqual(['setMessageReaction']);
        const [react] = await relay.sandbox.calls(TOKEN, 'setMessageReaction');
        expect(react.params).toMatchObject({ message_id: hello.update.message!.message_id });
        expect(react.status).toBe(200);
      } finally {
        await relay.stop();
      }
    }, 120_000);
  });

  describe('session-bot.ts', () => {
    const db = exampleDatabase();
    it('the counter persists across messages and across a restart, per user', async () => {
      const first = await startRelay('session-bot.ts', db.url, db.client);
      try {
        await first.say(7201, '/count', 1, 501);
        await first.say(7201, '/count', 1, 501);
        await first.say(7201, '/count', 1, 502); // another user in the same chat: a counter of their own
        expect((await first.chat(7201)).map((m) => m.text)).toEqual(['Count: 1', 'Count: 2', 'Count: 1']);
      } finally {
        await first.stop();
      }

      const second = await startRelay('session-bot.ts', db.url, db.client);
      try {
        await second.say(7201, '/count', 1, 501);
        await second.say(7201, '/reset', 1, 502);
        await second.say(7201, '/count', 1, 502);
        expect((await second.chat(7201)).map((m) => m.text)).toEqual(['Count: 3', 'Count reset.', 'Count: 1']);
      } finally {
        await second.stop();
      }
    }, 150_000);
  });

  describe('wizard-bot.ts', () => {
    const db = exampleDatabase();
    it('completes the three steps, asking again for a bad age', async () => {
      const relay = await startRelay('wizard-bot.ts', db.url, db.client);
      try {
        for (const text of ['/signup', 'Ada', 'not a number', '36']) await relay.say(7301, text, 1);
        expect((await relay.chat(7301)).map((m) => m.text)).toEqual([
          'What is your name?',
          'How old are you, Ada?',
          'Please send your age as a number.',
          'Thanks, Ada: signed up at 36.',
        ]);
        // the scene was left: a plain message is no longer taken as a wizard step
        const after = await relay.say(7301, 'hello', 0);
        expect(after.rows).toEqual([]);
      } finally {
        await relay.stop();
      }
    }, 120_000);
  });
});
