import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** Thousands separators, `d` decimals. */
export const fmt = (n: number, d = 0) =>
  n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });

/** The p-th percentile (nearest rank) of `xs`. */
export const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
};

/** The upper middle value of `xs` (the middle one for an odd count). */
export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** The machine's 1, 5 and 15 minute load averages, as /proc/loadavg prints them. */
export const loadAverage = () => fs.readFileSync('/proc/loadavg', 'utf8').trim().split(' ').slice(0, 3).join(' ');

/**
 * A real `tg-relay worker` process from the TypeScript sources (scripts/tg-relay-dev.js, like the
 * tests: a bench measures the code in the checkout, never a stale dist/), resolved once it logged
 * "worker started". `stop()` sends SIGTERM and waits for the exit.
 */
export async function startBenchWorker(
  env: Record<string, string>,
): Promise<{ child: ChildProcess; stop(): Promise<void> }> {
  const child = spawn(process.execPath, [path.resolve(__dirname, '../../scripts/tg-relay-dev.js'), 'worker'], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d) => (out += d));
  child.stderr?.on('data', (d) => (out += d));
  const startDeadline = Date.now() + 30_000;
  while (!out.includes('worker started')) {
    if (Date.now() > startDeadline || child.exitCode !== null) throw new Error(`worker did not start:\n${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    child,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    },
  };
}
