/** `tg-relay admin` as a real child process, and a small JSON client for its HTTP API. */
import { freePort } from '../../libs/db';
import { exited, startCli } from './cli';
import { waitFor } from './wait-for';

export type AdminProcess = ReturnType<typeof startCli> & {
  /** `http://127.0.0.1:PORT` */
  url: string;
  /** A JSON request with the bearer token; the answer's status and parsed body. */
  api: <T = Record<string, unknown>>(method: 'GET' | 'POST', path: string, body?: unknown) => Promise<ApiAnswer<T>>;
};

export interface ApiAnswer<T> {
  status: number;
  body: T;
}

const ADMIN_TOKEN = 'admin-process-token-not-a-secret';

/** Starts `tg-relay admin` on a free loopback port and waits until it listens. */
export async function startAdminProcess(env: Record<string, string | undefined>): Promise<AdminProcess> {
  const port = await freePort();
  const child = startCli(['admin'], {
    LOG_LEVEL: 'info',
    ...env,
    ADMIN_TOKEN,
    ADMIN_HOST: '127.0.0.1',
    ADMIN_PORT: String(port),
  });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(
    () => {
      if (child.exitCode !== null) throw new Error(`admin exited early (${child.exitCode}):\n${child.output()}`);
      return child.output().includes('admin API listening');
    },
    { timeoutMs: 30_000, what: 'admin API listening' },
  );
  const api = async <T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<ApiAnswer<T>> => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${ADMIN_TOKEN}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as T };
  };
  return Object.assign(child, { url, api });
}

/** SIGKILLs (if still running) and waits for the exit. */
export async function killAdmin(child: AdminProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGKILL');
  await exited(child);
}
