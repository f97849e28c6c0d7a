/** `tg-relay worker` as a real child process (the CLI from the sources, scripts/tg-relay-dev.js), for crash and stop tests. */
import type { ChildProcess } from 'node:child_process';
import type { Pool } from '../../libs/db';
import { exited, startCli } from './cli';
import { waitFor } from './wait-for';

export type WorkerProcess = ChildProcess & { output: () => string };

export function startWorkerProcess(env: Record<string, string | undefined>): WorkerProcess {
  return startCli(['worker'], { LOG_LEVEL: 'info', STALE_AFTER: '2s', SHUTDOWN_TIMEOUT: '5s', ...env });
}

/** Waits for the "worker started" log line; returns the worker id it printed. */
export async function workerStarted(child: WorkerProcess, timeoutMs = 20_000): Promise<string> {
  const line = await waitFor(
    () => {
      if (child.exitCode !== null) throw new Error(`worker exited early (${child.exitCode}):\n${child.output()}`);
      return child
        .output()
        .split('\n')
        .find((l) => l.includes('"worker started'));
    },
    { timeoutMs, what: 'worker started' },
  );
  return JSON.parse(line).workerId as string;
}

/** SIGKILLs (if still running) and waits for the exit; for afterEach. */
export async function killWorker(child: WorkerProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGKILL');
  await exited(child);
}

/**
 * Waits until PostgreSQL has closed every backend whose application_name starts with `prefix`.
 * A SIGKILLed client's last statement can still commit on the server after the process is gone,
 * so a test that reads the dead worker's state waits for its backends first.
 */
export async function backendsClosed(pool: Pool, prefix = 'tg-relay:worker'): Promise<void> {
  await waitFor(
    async () =>
      (
        await pool.query(
          `select count(*)::int as n from pg_stat_activity
            where datname = current_database() and starts_with(application_name, $1)`,
          [prefix],
        )
      ).rows[0].n === 0,
    { what: `backends of ${prefix}* closed`, timeoutMs: 10_000, intervalMs: 20 },
  );
}
