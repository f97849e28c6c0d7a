/**
 * `tg-relay sandbox` — runs the local Bot API sandbox and the capture collector until SIGINT/SIGTERM.
 * `tg-relay sandbox send <text> [--chat ID] [--from ID] [--token T]` — injects a user message into a
 *   running sandbox (SANDBOX_URL, default http://127.0.0.1:8081) and prints its update_id.
 * `tg-relay sandbox press <data> --message ID [--chat ID] [--from ID] [--token T]` — a user pressing an
 *   inline button with that callback data on the bot's message ID (`sent` lists message ids).
 * `tg-relay sandbox sent [--token T]` — prints what the bot sent, one JSON line per message.
 */
import { parseArgs as parseArgsStrict } from 'node:util';
import { loadConfig } from '../../libs/config';
import { ConfigError } from '../../libs/config/errors';
import { createLogger } from '../../libs/observability/logger';
import { createSandboxClient, SANDBOX_DEFAULT_TOKEN, SandboxControlError, startSandboxPeers } from '../../libs/sandbox';
import { errorMessage } from '../../libs/errors';

type Env = Record<string, string | undefined>;

const USAGE = `usage:
  tg-relay sandbox                                   run the Bot API sandbox and the collector
  tg-relay sandbox send <text> [--chat ID] [--from ID] [--token T]
                                                     inject a user message into a running sandbox
  tg-relay sandbox press <data> --message ID [--chat ID] [--from ID] [--token T]
                                                     press an inline button (its callback data) on
                                                     the bot's message ID
  tg-relay sandbox sent [--token T]                  print what the bot sent

environment: SANDBOX_HOST (127.0.0.1), SANDBOX_PORT (8081), SANDBOX_COLLECTOR_PORT (8082),
             SANDBOX_URL for send/press/sent (http://127.0.0.1:8081), TELEGRAM_BOT_TOKEN (else the sandbox token)
`;

function sandboxUrl(env: Env): string {
  const raw = env.SANDBOX_URL?.trim() || 'http://127.0.0.1:8081';
  try {
    const u = new URL(raw);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('protocol');
  } catch {
    throw new ConfigError(`SANDBOX_URL: expected the sandbox base URL like http://127.0.0.1:8081, got "${raw}"`, [
      { variable: 'SANDBOX_URL', problem: `expected an http(s) URL, got "${raw}"` },
    ]);
  }
  return raw.replace(/\/+$/, '');
}

async function serve(env: Env): Promise<number> {
  // the same validated variables (SANDBOX_HOST, SANDBOX_PORT, SANDBOX_COLLECTOR_PORT, LOG_LEVEL) as `tg-relay start`
  const config = loadConfig(env);
  const logger = createLogger({ level: config.LOG_LEVEL, name: 'tg-relay-sandbox' });
  const { sandbox, collector, stop } = await startSandboxPeers({
    host: config.SANDBOX_HOST,
    port: config.SANDBOX_PORT,
    collectorPort: config.SANDBOX_COLLECTOR_PORT,
    logger,
  });

  const api = sandbox.url;
  const out = [
    'tg-relay sandbox: local Telegram Bot API sandbox and capture collector are running (fakes, not Telegram)',
    '',
    `  Bot API sandbox: ${api}`,
    `  collector:       ${collector.url}`,
    '',
    'Point tg-relay at them:',
    `  TELEGRAM_API_ROOT=${api}`,
    `  CAPTURE_URL=${collector.captureUrl}`,
    `  TELEGRAM_BOT_TOKEN=${SANDBOX_DEFAULT_TOKEN}   (sample: any <digits>:<secret> token is accepted)`,
    '',
    'Inject a user message:',
    `  SANDBOX_URL=${api} tg-relay sandbox send "hello" --chat 1001`,
    'See what the bot sent and what the collector received:',
    `  SANDBOX_URL=${api} tg-relay sandbox sent`,
    `  curl ${collector.url}/sandbox/received`,
    `Control APIs: ${api}/sandbox/… and ${collector.url}/sandbox/… (faults, limits, scripted errors, reset)`,
    'Stop with Ctrl-C or SIGTERM.',
    '',
  ];
  process.stdout.write(out.join('\n'));

  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    const handler = (s: NodeJS.Signals): void => {
      process.off('SIGINT', handler);
      process.off('SIGTERM', handler);
      resolve(s);
    };
    process.on('SIGINT', handler);
    process.on('SIGTERM', handler);
  });
  await stop();
  process.stdout.write(`tg-relay sandbox: stopped (${signal})\n`);
  return 0;
}

interface SendArgs {
  text?: string;
  options: Record<string, string>;
}

/** The subcommand's own flags (node:util parseArgs); anything else is a usage error. */
function parseArgs(args: string[], allowed: string[]): SendArgs {
  let parsed;
  try {
    parsed = parseArgsStrict({
      args,
      options: Object.fromEntries(allowed.map((a) => [a, { type: 'string' as const }])),
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    throw new UsageError(errorMessage(err) ?? String(err));
  }
  const result: SendArgs = { options: {} };
  for (const [k, v] of Object.entries(parsed.values)) if (typeof v === 'string') result.options[k] = v;
  if (parsed.positionals.length > 0) result.text = parsed.positionals.join(' ');
  return result;
}

class UsageError extends Error {}

function intOption(opts: Record<string, string>, name: string, fallback: number): number {
  const v = opts[name];
  if (v === undefined) return fallback;
  if (!/^-?\d+$/.test(v) || Number(v) === 0) throw new UsageError(`--${name} must be a non-zero integer, got "${v}"`);
  return Number(v);
}

async function send(args: string[], env: Env): Promise<number> {
  const parsed = parseArgs(args, ['chat', 'from', 'token']);
  if (parsed.text === undefined) throw new UsageError('send needs the message text');
  const chatId = intOption(parsed.options, 'chat', 1001);
  const fromId = parsed.options.from === undefined ? undefined : intOption(parsed.options, 'from', chatId);
  const token = parsed.options.token ?? (env.TELEGRAM_BOT_TOKEN || SANDBOX_DEFAULT_TOKEN);
  const client = createSandboxClient(sandboxUrl(env));
  const update = await client.injectMessage(token, { chatId, text: parsed.text, fromId });
  process.stdout.write(`update_id=${update.update_id} chat_id=${chatId} bot_id=${token.split(':')[0]}\n`);
  return 0;
}

async function press(args: string[], env: Env): Promise<number> {
  const parsed = parseArgs(args, ['message', 'chat', 'from', 'token']);
  if (parsed.text === undefined) throw new UsageError("press needs the button's callback data");
  // a button belongs to a message: without it the bot could neither find nor edit what was pressed
  if (parsed.options.message === undefined) throw new UsageError('press needs --message ID (see `sandbox sent`)');
  const messageId = intOption(parsed.options, 'message', 0);
  const chatId = intOption(parsed.options, 'chat', 1001);
  const fromId = parsed.options.from === undefined ? undefined : intOption(parsed.options, 'from', chatId);
  const token = parsed.options.token ?? (env.TELEGRAM_BOT_TOKEN || SANDBOX_DEFAULT_TOKEN);
  const client = createSandboxClient(sandboxUrl(env));
  const update = await client.injectCallbackQuery(token, { chatId, data: parsed.text, fromId, messageId });
  process.stdout.write(
    `update_id=${update.update_id} callback_query_id=${update.callback_query!.id} chat_id=${chatId} message_id=${messageId}\n`,
  );
  return 0;
}

async function sent(args: string[], env: Env): Promise<number> {
  const parsed = parseArgs(args, ['token']);
  if (parsed.text !== undefined) throw new UsageError(`unexpected argument "${parsed.text}"`);
  const token = parsed.options.token ?? (env.TELEGRAM_BOT_TOKEN || SANDBOX_DEFAULT_TOKEN);
  const messages = await createSandboxClient(sandboxUrl(env)).sent(token);
  for (const m of messages) process.stdout.write(`${JSON.stringify(m)}\n`);
  if (messages.length === 0) process.stderr.write('(the bot has sent nothing yet)\n');
  return 0;
}

export async function run(args: string[], _parsed?: unknown, env: Env = process.env): Promise<number> {
  const [sub, ...rest] = args;
  try {
    if (sub === undefined) return await serve(env);
    if (sub === 'send') return await send(rest, env);
    if (sub === 'press') return await press(rest, env);
    if (sub === 'sent') return await sent(rest, env);
    if (sub === 'help' || sub === '--help' || sub === '-h') {
      process.stdout.write(USAGE);
      return 0;
    }
    throw new UsageError(`unknown subcommand "${sub}"`);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`tg-relay sandbox: ${err.message}\n\n${USAGE}`);
      return 2;
    }
    if (err instanceof SandboxControlError) {
      process.stderr.write(`tg-relay sandbox: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
}
