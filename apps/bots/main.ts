/**
 * `tg-relay bots <add|list|enable|disable|remove>`: the bot registry (relay.bots) from a shell.
 * `add` takes the token from TELEGRAM_BOT_TOKEN (never an argument: arguments end up in shell
 * history and `ps`), checks it with getMe and stores it encrypted under TOKEN_ENCRYPTION_KEY;
 * adding a registered bot again replaces its registration. Output is one JSON line per bot
 * (`list`) or the bot acted on; never the token. Logs go to stderr.
 */
import pino from 'pino';
import type { ParsedArgs } from '../cli/main';
import { loadConfig, type Config } from '../../libs/config';
import { ConfigError } from '../../libs/config/errors';
import { createPool, resolveDatabase, type Pool } from '../../libs/db';
import { createLogger } from '../../libs/observability/logger';
import { addBot, botDelete, botsList, botSetEnabled, parseTokenKey, type BotRow } from '../../libs/bots';

const line = (b: BotRow) =>
  `${JSON.stringify({
    id: b.id,
    username: b.username,
    enabled: b.enabled,
    handlers: b.handlers,
    capture_url: b.capture_url,
    allowed_chat_ids: b.allowed_chat_ids,
    ops_chat_id: b.ops_chat_id,
    settings: b.settings,
    version: Number(b.version),
    updated_at: b.updated_at.toISOString(),
  })}\n`;

function usageError(message: string): number {
  process.stderr.write(`tg-relay bots: ${message}\nrun "tg-relay bots --help" for its usage\n`);
  return 2;
}

function settingsOf(raw: ParsedArgs['values'][string]): Record<string, string> | string {
  const out: Record<string, string> = {};
  for (const item of [raw ?? []].flat()) {
    const m = /^([A-Z_]+)=(.*)$/.exec(String(item));
    if (!m) return `--setting: expected NAME=VALUE, got "${String(item).slice(0, 64)}"`;
    out[m[1]] = m[2];
  }
  return out;
}

async function add(pool: Pool, config: Config, values: ParsedArgs['values']): Promise<number> {
  if (!config.TELEGRAM_BOT_TOKEN)
    throw new ConfigError('TELEGRAM_BOT_TOKEN: set it to the token of the bot to add (it is never an argument)', [
      { variable: 'TELEGRAM_BOT_TOKEN', problem: 'required by tg-relay bots add' },
    ]);
  if (!config.TOKEN_ENCRYPTION_KEY)
    throw new ConfigError('TOKEN_ENCRYPTION_KEY: required to store a token (32 bytes: `openssl rand -hex 32`)', [
      { variable: 'TOKEN_ENCRYPTION_KEY', problem: 'required by tg-relay bots add' },
    ]);
  const settings = settingsOf(values.setting);
  if (typeof settings === 'string') return usageError(settings);
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  const { bot, created } = await addBot(
    pool,
    {
      token: config.TELEGRAM_BOT_TOKEN,
      handlers: str(values.handlers),
      captureUrl: str(values['capture-url']),
      allowedChatIds: (str(values['allowed-chat-ids']) ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
      opsChatId: str(values['ops-chat-id']),
      enabled: values.disabled !== true,
      settings,
    },
    { key: parseTokenKey(config.TOKEN_ENCRYPTION_KEY), apiRoot: config.TELEGRAM_API_ROOT },
  );
  process.stderr.write(`tg-relay bots: bot ${bot.id} (@${bot.username ?? '?'}) ${created ? 'added' : 'updated'}\n`);
  process.stdout.write(line(bot));
  return 0;
}

export async function run(_args: string[], parsed: ParsedArgs): Promise<number> {
  const [verb, id, ...rest] = parsed.positionals;
  const takesId = ['enable', 'disable', 'remove'].includes(verb);
  if (!['add', 'list'].includes(verb ?? '') && !takesId)
    return usageError(`expected add, list, enable, disable or remove`);
  if (takesId && !/^[0-9]{1,20}$/.test(id ?? '')) return usageError(`${verb}: expected the bot id (digits)`);
  if (rest.length > 0 || (!takesId && id !== undefined)) return usageError(`${verb}: unexpected argument`);
  // the token is the bot to add, not a bot this process serves: the configuration reads it as usual
  const config = loadConfig();
  const logger = createLogger({ level: config.LOG_LEVEL, destination: pino.destination({ fd: 2, sync: true }) }).child({
    app: 'bots',
  });
  const db = await resolveDatabase(config, logger);
  const pool = createPool(db.url, { max: 1, applicationName: 'tg-relay:bots', poolMode: config.DB_POOL_MODE });
  try {
    if (verb === 'add') return await add(pool, config, parsed.values);
    if (verb === 'list') {
      for (const b of await botsList(pool)) process.stdout.write(line(b));
      return 0;
    }
    if (verb === 'remove') {
      if (!(await botDelete(pool, id))) return notFound(id);
      process.stderr.write(`tg-relay bots: bot ${id} removed (its messages and audit rows stay)\n`);
      return 0;
    }
    const bot = await botSetEnabled(pool, id, verb === 'enable');
    if (!bot) return notFound(id);
    process.stdout.write(line(bot));
    return 0;
  } finally {
    await pool.end();
    await db.stop();
  }
}

function notFound(id: string): number {
  process.stderr.write(`tg-relay bots: [RELAY_BOT_NOT_FOUND] no registered bot has id ${id}\n`);
  return 1;
}
