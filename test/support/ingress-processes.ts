/** Real `tg-relay poller` processes for the crash, fencing and takeover tests. */
import type { ChildProcess } from 'node:child_process';
import { exited, startCli } from './cli';
import type { LogLine } from './ingress-harness';

export type PollerProcess = ChildProcess & { output: () => string };

export interface PollerEnv {
  databaseUrl: string;
  apiRoot: string;
  token: string;
  leaseTtl?: string;
  pollTimeout?: string;
  extra?: Record<string, string>;
}

export function startPollerProcess(e: PollerEnv): PollerProcess {
  return startCli(['poller'], {
    DATABASE_URL: e.databaseUrl,
    TELEGRAM_API_ROOT: e.apiRoot,
    TELEGRAM_BOT_TOKEN: e.token,
    LEASE_TTL: e.leaseTtl ?? '1s',
    POLL_TIMEOUT: e.pollTimeout ?? '1s',
    LOG_LEVEL: 'info',
    ...e.extra,
  });
}

/** The JSON log lines a process printed so far. */
export function logLines(p: PollerProcess): LogLine[] {
  return p
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => {
      try {
        return JSON.parse(l);
      } catch {
        return {};
      }
    });
}

export function hasLog(p: PollerProcess, msg: string | RegExp): boolean {
  return logLines(p).some((l) => (typeof msg === 'string' ? l.msg === msg : msg.test(l.msg ?? '')));
}

/** Owner ids carry the pid: host/pid/random. */
export function ownedBy(owner: string | null | undefined, p: PollerProcess): boolean {
  return !!owner && owner.split('/')[1] === String(p.pid);
}

export async function killHard(p: PollerProcess): Promise<void> {
  if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  await exited(p);
}

/** A `tg-relay poller` without a token: it polls its share of the registered bots. */
export function startFleetPollerProcess(e: Omit<PollerEnv, 'token'> & { tokenKeyHex: string }): PollerProcess {
  return startCli(['poller'], {
    DATABASE_URL: e.databaseUrl,
    TELEGRAM_API_ROOT: e.apiRoot,
    TOKEN_ENCRYPTION_KEY: e.tokenKeyHex,
    LEASE_TTL: e.leaseTtl ?? '2s',
    POLL_TIMEOUT: e.pollTimeout ?? '1s',
    LOG_LEVEL: 'info',
    ...e.extra,
  });
}
