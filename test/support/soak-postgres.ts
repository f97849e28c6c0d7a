/**
 * The PostgreSQL server of a soak run, and how to restart it in the middle of the run.
 *
 * - Default: a dedicated embedded PostgreSQL in the run's directory, stopped and started again on
 *   the same data directory and port (so the fleet's DATABASE_URL stays valid).
 * - An external server (`npm run soak` with DATABASE_URL): the run creates its own database there
 *   and restarts the server with SOAK_PG_RESTART_CMD (a shell command, e.g.
 *   `pg_ctlcluster 16 main restart -m fast` or `docker restart pg`), or, when that is unset and the
 *   server is local, with `pg_ctlcluster <version> <cluster> restart -m fast` for the cluster that
 *   `pg_lsclusters` lists on the URL's port. Restarting a server other programs use disrupts them:
 *   that is the point of the exercise, so it is only done when asked for (DATABASE_URL given).
 */
import { execFile, spawnSync } from 'node:child_process';
import path from 'node:path';
import { Client } from 'pg';
import { startRestartablePostgres, type RestartablePostgres } from './worker-restartable-pg';

export interface SoakPostgres {
  /** URL of the server's maintenance database (the run creates its own database). */
  url: string;
  /** How the restart is done, for the report. */
  describe: string;
  restart(): Promise<void>;
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function startEmbeddedSoakPostgres(dir: string): Promise<SoakPostgres> {
  const dataDir = path.join(dir, 'pg');
  let pg: RestartablePostgres = await startRestartablePostgres(dataDir);
  return {
    url: pg.url,
    describe: 'embedded PostgreSQL stopped and started on the same data directory and port',
    async restart() {
      await pg.stop();
      await sleep(500);
      pg = await startRestartablePostgres(dataDir, pg.port);
    },
    close: () => pg.stop(),
  };
}

/** The pg_ctlcluster command for a local cluster listening on `port`, if there is one. */
export function pgCtlClusterCommand(url: string): string | undefined {
  const u = new URL(url);
  if (!['localhost', '127.0.0.1', '::1', '[::1]', ''].includes(u.hostname)) return undefined;
  const port = Number(u.port || 5432);
  const ls = spawnSync('pg_lsclusters', ['-h'], { encoding: 'utf8' });
  if (ls.status !== 0) return undefined;
  for (const line of ls.stdout.split('\n')) {
    const [version, cluster, p] = line.trim().split(/\s+/);
    if (version && cluster && Number(p) === port) return `pg_ctlcluster ${version} ${cluster} restart -m fast`;
  }
  return undefined;
}

export function externalSoakPostgres(url: string, restartCommand: string | undefined): SoakPostgres {
  const command = restartCommand || pgCtlClusterCommand(url);
  return {
    url,
    describe: command ? `external server restarted with: ${command}` : 'external server (no restart command)',
    async restart() {
      if (!command) {
        throw new Error(
          'cannot restart the PostgreSQL at DATABASE_URL: set SOAK_PG_RESTART_CMD (e.g. "pg_ctlcluster 16 main restart -m fast") or run with --pg-restarts 0',
        );
      }
      await new Promise<void>((resolve, reject) =>
        execFile('/bin/sh', ['-c', command], { timeout: 120_000 }, (err, _out, stderr) =>
          err ? reject(new Error(`${command}: ${err.message} ${stderr}`)) : resolve(),
        ),
      );
      // back when it accepts connections again
      const deadline = Date.now() + 60_000;
      for (;;) {
        const c = new Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
        try {
          await c.connect();
          await c.query('select 1');
          await c.end();
          return;
        } catch (err) {
          await c.end().catch(() => undefined);
          if (Date.now() > deadline)
            throw new Error(`PostgreSQL not back within 60 s after "${command}": ${(err as Error).message}`, {
              cause: err,
            });
          await sleep(250);
        }
      }
    },
    close: () => Promise.resolve(),
  };
}
