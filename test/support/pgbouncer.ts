/**
 * A real PgBouncer (Debian's `pgbouncer` package; `.ci/run` installs it) in front of the test
 * server, for the tests of DB_POOL_MODE (docs/pgbouncer.md). Each call starts its own process on a
 * free port with its own config in a temp folder; every database name maps to the same name on the
 * test server. As root it runs as the `postgres` user (PgBouncer refuses to run as root), so its
 * folder is under os.tmpdir(), reachable by that user, not under the repository.
 */
import { ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, postgresUser } from '../../libs/db/embedded';
import { adminUrl } from './db';
import { exited } from './cli';
import { waitFor } from './wait-for';

export const PGBOUNCER_BIN = '/usr/sbin/pgbouncer';

export interface PgBouncer {
  port: number;
  poolMode: 'session' | 'transaction';
  /** `url` (a database URL on the test server) with PgBouncer's host and port instead. */
  urlFor(url: string): string;
  /** What PgBouncer logged so far. */
  output(): string;
  /** Stops it (SIGTERM, then SIGKILL) and removes its folder. Idempotent. */
  stop(): Promise<void>;
}

/** `key = value` config values in PgBouncer's connection-string syntax ('…' quoting). */
const quote = (v: string) => `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

export async function startPgBouncer(poolMode: 'session' | 'transaction'): Promise<PgBouncer> {
  if (!fs.existsSync(PGBOUNCER_BIN))
    throw new Error(
      `${PGBOUNCER_BIN} is missing: these tests run a real PgBouncer. .ci/run installs it ` +
        '(DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer); install it the same way to run them here.',
    );
  const upstream = new URL(adminUrl());
  const user = decodeURIComponent(upstream.username || 'postgres');
  const password = decodeURIComponent(upstream.password);
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tg-relay-pgbouncer-'));
  fs.chmodSync(dir, 0o755);
  const who = postgresUser();
  const server = [
    `host=${upstream.hostname}`,
    `port=${upstream.port || '5432'}`,
    `user=${quote(user)}`,
    ...(password ? [`password=${quote(password)}`] : []),
  ].join(' ');
  const ini = [
    '[databases]',
    // the fallback entry: any database name, same name upstream
    `* = ${server}`,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    'unix_socket_dir =',
    'auth_type = trust',
    `auth_file = ${path.join(dir, 'users.txt')}`,
    `pool_mode = ${poolMode}`,
    'max_client_conn = 500',
    'default_pool_size = 40',
    // what a stock install sends back: no ignore_startup_parameters, prepared statements unsupported
    '',
  ].join('\n');
  fs.writeFileSync(path.join(dir, 'pgbouncer.ini'), ini, { mode: 0o600 });
  fs.writeFileSync(path.join(dir, 'users.txt'), `"${user}" "${password}"\n`, { mode: 0o600 });
  if (who) for (const f of ['', 'pgbouncer.ini', 'users.txt']) fs.chownSync(path.join(dir, f), who.uid, who.gid);

  const child: ChildProcess = spawn(PGBOUNCER_BIN, [path.join(dir, 'pgbouncer.ini')], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(who ? { uid: who.uid, gid: who.gid } : {}),
  });
  let out = '';
  child.stdout?.on('data', (d) => (out += d));
  child.stderr?.on('data', (d) => (out += d));
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited(child);
        clearTimeout(killer);
      }
      fs.rmSync(dir, { recursive: true, force: true });
    })());
  try {
    await waitFor(
      () => {
        if (child.exitCode !== null) throw new Error(`pgbouncer exited (${child.exitCode}):\n${out}`);
        return out.includes(`listening on 127.0.0.1:${port}`);
      },
      { timeoutMs: 10_000, what: 'pgbouncer listening' },
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    port,
    poolMode,
    urlFor(url) {
      const u = new URL(url);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      u.password = '';
      return u.toString();
    },
    output: () => out,
    stop,
  };
}
