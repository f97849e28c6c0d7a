/** Real `tg-relay poller` processes for the crash, fencing and takeover tests. */
import type { ChildProcess } from 'node:child_process';
import { freePort } from '../../libs/db';
import { exited, startCli } from './cli';
import type { LogLine } from './ingress-harness';
import { waitFor } from './wait-for';

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

/**
 * A webhook poller started on a free port and listening there. freePort's port is only free when
 * it answers: an outgoing connection of a parallel test can take it before the process binds it,
 * so a process that exits with EADDRINUSE is started again on another port.
 */
export async function startListening(
  start: (port: number) => PollerProcess,
): Promise<{ p: PollerProcess; port: number }> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const p = start(port);
    await waitFor(() => hasLog(p, 'webhook endpoint listening') || p.exitCode !== null, {
      timeoutMs: 60_000,
      what: 'the poller listening',
    });
    if (p.exitCode === null) return { p, port };
    if (attempt === 3 || !p.output().includes('EADDRINUSE'))
      throw new Error(`poller exited: ${p.output().slice(-2000)}`);
  }
}
