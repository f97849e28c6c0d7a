/**
 * REPLY_MODE=direct: a sendMessage Telegram would refuse whatever happens (over 4096 characters
 * without a parse_mode, blank, a lone surrogate, a NUL) is refused at the call with
 * RELAY_INVALID_REPLY and fails its update at once, instead of a Telegram 400 retried until the
 * budget is spent while the chat's next updates wait. Other replies reach the (sandbox) Bot API.
 */
import { createBotApiSandbox, type BotApiSandbox } from '../../../libs/sandbox';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import type { RegisterHandlers } from '../../../libs/dispatch';
import { attemptsOf, DispatchHarness, inboxRows, startDispatchWorker, storeUpdates, TOKEN } from './helpers';

const EMOJI = '\u{1F600}';
const REPLIES: Record<string, string> = {
  long: 'x'.repeat(5_000),
  blank: ' \n ',
  surrogate: `a${EMOJI.slice(0, 1)}`,
  nul: 'a\u0000b',
};

const bot: RegisterHandlers = (b) => {
  b.on('text', (ctx) => ctx.reply(REPLIES[ctx.message.text] ?? `echo: ${ctx.message.text}`));
};

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let sandbox: BotApiSandbox;
let harness: DispatchHarness;

beforeAll(async () => {
  db = await createMigratedDatabase('dsp_hostile_direct');
  sandbox = createBotApiSandbox({ limits: { enabled: false } });
  await sandbox.start();
  // a budget of 3: a retried Telegram 400 would show attempts = 3
  harness = await startDispatchWorker({ url: db.url, pool: db.pool, apiRoot: sandbox.url, register: bot });
});
afterAll(async () => {
  await harness?.stop();
  await sandbox?.stop();
  await db?.drop();
});

const msg = (text: string, chatId: number) =>
  sandbox.injectMessage(TOKEN, { chatId, text }) as unknown as Record<string, unknown> & { update_id: number };

it.each(Object.keys(REPLIES))(
  "a %s reply fails its update after one attempt; the chat's next update is answered",
  async (kind) => {
    const chat = 300 + Object.keys(REPLIES).indexOf(kind);
    const [bad, next] = await storeUpdates(db.pool, harness.boss, [msg(kind, chat), msg('after', chat)]);
    await waitFor(async () => (await inboxRows(db.pool)).find((r) => r.id === next && r.state === 'handled'), {
      what: 'the next update handled',
      timeoutMs: 15_000,
    });
    const row = (await inboxRows(db.pool)).find((r) => r.id === bad)!;
    expect(row).toMatchObject({ state: 'failed', attempts: 1 });
    expect(row.last_error).toMatch(/^RELAY_INVALID_REPLY: reply 1 \(sendMessage\) refused/);
    expect((await attemptsOf(db.pool, bad)).map((a) => [a.outcome, a.error_code])).toEqual([
      ['failed', 'RELAY_INVALID_REPLY'],
    ]);
    expect(
      sandbox
        .sent(TOKEN)
        .filter((s) => s.resolved_chat_id === chat)
        .map((s) => s.text),
    ).toEqual(['echo: after']);
  },
);
