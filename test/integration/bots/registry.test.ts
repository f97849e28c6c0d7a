/**
 * The bot registry on a real database and the Bot API sandbox: a token is checked with getMe and
 * stored only encrypted; a watching process sees an added, disabled, changed or removed bot within
 * seconds (NOTIFY), and a process without the right key serves nothing and says why.
 */
import crypto from 'node:crypto';
import {
  addBot,
  botDelete,
  botsList,
  botSetEnabled,
  parseTokenKey,
  watchBots,
  type BotWatch,
} from '../../../libs/bots';
import { createLogger } from '../../../libs/observability/logger';
import { createBotApiSandbox, type BotApiSandbox } from '../../../libs/sandbox';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';

const key = parseTokenKey(crypto.randomBytes(32).toString('hex'));
const TOKEN_A = '7100000001:registry-test-token-a-not-a-secret';
const TOKEN_B = '7100000002:registry-test-token-b-not-a-secret';
const logger = createLogger({ level: 'silent' });

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let sandbox: BotApiSandbox;
const watches: BotWatch[] = [];

beforeAll(async () => {
  db = await createMigratedDatabase('bots');
  sandbox = createBotApiSandbox({ limits: { enabled: false } });
  await sandbox.start();
});
afterAll(async () => {
  for (const w of watches) await w.stop();
  await sandbox.stop();
  await db.drop();
});

const watch = async (k = key) => {
  const w = await watchBots({ pool: db.pool, listenUrl: db.url, key: k, logger, refreshMs: 60_000 });
  watches.push(w);
  return w;
};

it('adds a bot checked with getMe; the database holds no token in clear, and adding it again updates it', async () => {
  const { bot, created } = await addBot(
    db.pool,
    { token: TOKEN_A, handlers: 'examples/echo-bot.ts', allowedChatIds: ['12', 12, ' -1001 '], opsChatId: '99' },
    { key, apiRoot: sandbox.url },
  );
  expect(created).toBe(true);
  expect(bot).toMatchObject({ id: '7100000001', enabled: true, allowed_chat_ids: ['12', '-1001'], ops_chat_id: '99' });
  expect(bot.username).toMatch(/./); // getMe's answer
  expect(JSON.stringify(bot)).not.toContain('registry-test-token');
  // the whole row as text, the encrypted column included
  const { rows } = await db.pool.query<{ t: string }>(
    `select b::text || encode(token_encrypted, 'escape') as t from relay.bots b`,
  );
  expect(rows[0].t).not.toContain('registry-test-token');

  const again = await addBot(
    db.pool,
    { token: TOKEN_A, captureUrl: 'http://127.0.0.1:9/c', settings: { OUTBOUND_RATE_PER_BOT: '20/1s' } },
    { key, apiRoot: sandbox.url },
  );
  expect(again.created).toBe(false);
  expect(Number(again.bot.version)).toBe(Number(bot.version) + 1);
  expect(again.bot).toMatchObject({ handlers: null, capture_url: 'http://127.0.0.1:9/c', allowed_chat_ids: [] });
  expect(again.bot.settings).toEqual({ OUTBOUND_RATE_PER_BOT: '20/1s' });
});

it('refuses a token Telegram refuses and bad fields with the field named, storing nothing', async () => {
  const revoked = '7100000003:registry-test-token-revoked';
  sandbox.revokeToken(revoked);
  await expect(addBot(db.pool, { token: revoked }, { key, apiRoot: sandbox.url })).rejects.toMatchObject({
    code: 'RELAY_BOT_TOKEN_REJECTED',
  });
  const bad: [Record<string, unknown>, string][] = [
    [{ token: 'not a token' }, 'token'],
    [{ token: TOKEN_B, captureUrl: 'ftp://x' }, 'capture_url'],
    [{ token: TOKEN_B, allowedChatIds: ['0'] }, 'allowed_chat_ids'],
    [{ token: TOKEN_B, opsChatId: 'x y' }, 'ops_chat_id'],
    [{ token: TOKEN_B, settings: { DATABASE_URL: 'x' } }, 'settings'],
    [{ token: TOKEN_B, settings: { OUTBOUND_RATE_PER_BOT: 'fast' } }, 'settings'],
  ];
  for (const [r, field] of bad)
    await expect(
      addBot(db.pool, r as unknown as Parameters<typeof addBot>[1], { key, apiRoot: sandbox.url }),
    ).rejects.toMatchObject({ code: 'RELAY_BOT_INVALID', field });
  expect((await botsList(db.pool)).map((b) => b.id)).toEqual(['7100000001']);
});

it('a watching process sees a bot added, disabled, re-enabled and removed within seconds', async () => {
  const w = await watch();
  expect([...w.bots().keys()]).toEqual(['7100000001']);
  expect(w.bots().get('7100000001')?.token).toBe(TOKEN_A);
  const seen: string[] = [];
  w.onChange((c) =>
    seen.push(
      ...c.added.map((b) => `+${b.id}`),
      ...c.changed.map((b) => `~${b.id}`),
      ...c.removed.map((id) => `-${id}`),
    ),
  );

  await addBot(db.pool, { token: TOKEN_B }, { key, apiRoot: sandbox.url });
  await waitFor(() => w.bots().has('7100000002'), { timeoutMs: 5_000 });
  await botSetEnabled(db.pool, '7100000002', false);
  await waitFor(() => !w.bots().has('7100000002'), { timeoutMs: 5_000 });
  await botSetEnabled(db.pool, '7100000002', true);
  await waitFor(() => w.bots().has('7100000002'), { timeoutMs: 5_000 });
  await addBot(db.pool, { token: TOKEN_B, handlers: 'h.ts' }, { key, apiRoot: sandbox.url });
  await waitFor(() => w.bots().get('7100000002')?.handlers === 'h.ts', { timeoutMs: 5_000 });
  expect(await botDelete(db.pool, '7100000002')).toBe(true);
  await waitFor(() => !w.bots().has('7100000002'), { timeoutMs: 5_000 });
  expect(seen).toEqual(['+7100000002', '-7100000002', '+7100000002', '~7100000002', '-7100000002']);
  expect(await botDelete(db.pool, '7100000002')).toBe(false);
});

it('without the key, or with another one, nothing is served and each bot says why (never its token)', async () => {
  const none = await watchBots({ pool: db.pool, key: undefined, logger, refreshMs: 60_000 });
  watches.push(none);
  expect(none.bots().size).toBe(0);
  expect(none.problems().get('7100000001')).toMatch(/TOKEN_ENCRYPTION_KEY is not set/);
  const other = await watch(parseTokenKey(crypto.randomBytes(32).toString('hex')));
  expect(other.bots().size).toBe(0);
  expect(other.problems().get('7100000001')).toMatch(/another TOKEN_ENCRYPTION_KEY/);
  expect(JSON.stringify([...other.problems()])).not.toContain('registry-test-token');
});
