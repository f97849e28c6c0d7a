import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { COMMANDS } from '../../../apps/cli/main';
import { ROOT, runCli } from '../../support/cli';
import { createTestDatabase } from '../../support/db';

/**
 * CLI conventions (from the sources; test/integration/package runs the same against the build):
 * --version, per-command --help that exits 0 without connecting to anything, usage errors exit 2.
 * "Without connecting" is checked by pointing DATA_DIR at an empty folder with DATABASE_URL unset:
 * any command that got past its argument parsing would start an embedded PostgreSQL there.
 */
const version = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
let dataDir: string;

beforeAll(() => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tg-relay-cli-'));
});
afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

const untouched = () => expect(fs.readdirSync(dataDir)).toEqual([]);

describe('tg-relay CLI conventions', () => {
  it('--version prints the package version and exits 0', async () => {
    const r = await runCli(['--version'], { DATA_DIR: dataDir });
    expect([r.code, r.stdout.trim()]).toEqual([0, version]);
  });

  it('--help lists every command and exits 0; no command at all is a usage error (2)', async () => {
    const help = await runCli(['--help'], { DATA_DIR: dataDir });
    expect(help.code).toBe(0);
    for (const name of Object.keys(COMMANDS)) expect(help.stdout).toMatch(new RegExp(`^  ${name} `, 'm'));
    const none = await runCli([], { DATA_DIR: dataDir });
    expect(none.code).toBe(2);
  });

  it.each(Object.keys(COMMANDS))(
    'tg-relay %s --help prints its usage and variables and exits 0 without connecting',
    async (name) => {
      const r = await runCli([name, '--help'], { DATA_DIR: dataDir, LOG_LEVEL: 'info' });
      expect([r.code, r.stderr]).toEqual([0, '']);
      expect(r.stdout).toContain(`tg-relay ${name}: `);
      expect(r.stdout).toContain('environment:');
      expect(r.stdout).toMatch(/LOG_LEVEL/);
      untouched();
    },
  );

  it.each(['migrate', 'worker', 'poller', 'admin', 'start'])(
    'tg-relay %s with an unknown flag is a usage error (exit 2), nothing started',
    async (name) => {
      const r = await runCli([name, '--no-such-flag'], { DATA_DIR: dataDir });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("Unknown option '--no-such-flag'");
      expect(r.stderr).toContain(`tg-relay ${name} --help`);
      untouched();
    },
  );

  it('an unknown command or top-level flag is a usage error (exit 2)', async () => {
    const cmd = await runCli(['frobnicate'], { DATA_DIR: dataDir });
    expect([cmd.code, cmd.stderr]).toEqual([2, expect.stringContaining('unknown command "frobnicate"')]);
    const flag = await runCli(['--frobnicate'], { DATA_DIR: dataDir });
    expect([flag.code, flag.stderr]).toEqual([2, expect.stringContaining('unknown option "--frobnicate"')]);
    untouched();
  });

  it('sandbox sent rejects a flag that is not its own (--chat belongs to send) with exit 2', async () => {
    const r = await runCli(['sandbox', 'sent', '--chat', '5'], { SANDBOX_URL: 'http://127.0.0.1:9' });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("Unknown option '--chat'");
  });
});

describe('tg-relay migrate with TELEGRAM_BOT_TOKEN', () => {
  it('registers the bot and OPS_CHAT_ID, so relay.enqueue_outbound works before any worker ran', async () => {
    const db = await createTestDatabase('cli_migrate');
    const c = new Client({ connectionString: db.url });
    try {
      const r = await runCli(['migrate'], {
        DATABASE_URL: db.url,
        TELEGRAM_BOT_TOKEN: '4242:secret-token-value',
        OPS_CHAT_ID: '-100777',
      });
      expect([r.code, r.stderr]).toEqual([0, '']);
      await c.connect();
      const settings = await c.query('select bot_id, default_chat_id from relay.outbound_settings');
      expect(settings.rows).toEqual([{ bot_id: '4242', default_chat_id: '-100777' }]);
      // no chat_id, no bot_id: both come from what migrate registered
      const { rows } = await c.query("select * from relay.enqueue_outbound('cli:1', null, 'hello ops')");
      expect(rows).toHaveLength(1);
      const row = await c.query("select bot_id, target_chat_id, state from relay.outbound where msg_id = 'cli:1'");
      expect(row.rows).toEqual([{ bot_id: '4242', target_chat_id: '-100777', state: 'pending' }]);

      // without a token migrate leaves the registration alone
      const again = await runCli(['migrate'], { DATABASE_URL: db.url });
      expect(again.code).toBe(0);
      expect((await c.query('select bot_id, default_chat_id from relay.outbound_settings')).rows).toEqual([
        { bot_id: '4242', default_chat_id: '-100777' },
      ]);
    } finally {
      await c.end();
      await db.drop();
    }
  });
});
