/**
 * `tg-relay bots` as an operator runs it: the token only from TELEGRAM_BOT_TOKEN, checked against
 * the Bot API (the sandbox), never printed; list/disable/remove by id; usage and configuration
 * problems named with their exit codes.
 */
import crypto from 'node:crypto';
import { createBotApiSandbox, type BotApiSandbox } from '../../../libs/sandbox';
import { runCli } from '../../support/cli';
import { createMigratedDatabase } from '../../support/db';

const TOKEN = '7200000001:bots-cli-test-token-not-a-secret';
const KEY = crypto.randomBytes(32).toString('hex');
let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let sandbox: BotApiSandbox;

beforeAll(async () => {
  db = await createMigratedDatabase('botscli');
  sandbox = createBotApiSandbox({ limits: { enabled: false } });
  await sandbox.start();
});
afterAll(async () => {
  await sandbox.stop();
  await db.drop();
});

const bots = (args: string[], env: Record<string, string | undefined> = {}) =>
  runCli(['bots', ...args], { DATABASE_URL: db.url, TELEGRAM_API_ROOT: sandbox.url, ...env });

it('adds, lists, disables and removes a bot; no output carries the token or the key', async () => {
  const outputs: string[] = [];
  const add = await bots(
    ['add', '--handlers', 'examples/echo-bot.ts', '--allowed-chat-ids', '5,6', '--setting', 'PAID_BROADCAST_RATE=100'],
    {
      TELEGRAM_BOT_TOKEN: TOKEN,
      TOKEN_ENCRYPTION_KEY: KEY,
    },
  );
  outputs.push(add.stdout, add.stderr);
  expect(add.code).toBe(0);
  expect(JSON.parse(add.stdout)).toMatchObject({
    id: '7200000001',
    enabled: true,
    handlers: 'examples/echo-bot.ts',
    allowed_chat_ids: ['5', '6'],
    settings: { PAID_BROADCAST_RATE: '100' },
  });

  const list = await bots(['list']);
  outputs.push(list.stdout, list.stderr);
  expect(
    list.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l).id),
  ).toEqual(['7200000001']);

  const disable = await bots(['disable', '7200000001']);
  outputs.push(disable.stdout, disable.stderr);
  expect(JSON.parse(disable.stdout)).toMatchObject({ enabled: false });

  const remove = await bots(['remove', '7200000001']);
  outputs.push(remove.stdout, remove.stderr);
  expect(remove.code).toBe(0);
  const again = await bots(['remove', '7200000001']);
  expect(again.code).toBe(1);
  expect(again.stderr).toContain('RELAY_BOT_NOT_FOUND');

  for (const o of outputs) {
    expect(o).not.toContain('bots-cli-test-token');
    expect(o).not.toContain(KEY);
  }
});

it('names what is wrong: no key (78), a bad key (78), a bad setting (1, the field), a bad verb or id (2)', async () => {
  const noKey = await bots(['add'], { TELEGRAM_BOT_TOKEN: TOKEN });
  expect(noKey.code).toBe(78);
  expect(noKey.stderr).toContain('TOKEN_ENCRYPTION_KEY');
  const badKey = await bots(['add'], { TELEGRAM_BOT_TOKEN: TOKEN, TOKEN_ENCRYPTION_KEY: 'abc' });
  expect(badKey.code).toBe(78);
  expect(badKey.stderr).toMatch(/TOKEN_ENCRYPTION_KEY.*32 bytes/);
  const badSetting = await bots(['add', '--setting', 'OUTBOUND_RATE_PER_BOT=fast'], {
    TELEGRAM_BOT_TOKEN: TOKEN,
    TOKEN_ENCRYPTION_KEY: KEY,
  });
  expect(badSetting.code).toBe(1);
  expect(badSetting.stderr).toContain('RELAY_BOT_INVALID');
  expect(badSetting.stderr).toContain('OUTBOUND_RATE_PER_BOT');
  expect((await bots(['frobnicate'])).code).toBe(2);
  expect((await bots(['disable', 'abc'])).code).toBe(2);
});
