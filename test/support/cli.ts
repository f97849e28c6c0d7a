import { ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';

export const ROOT = path.resolve(__dirname, '../..');
/** The CLI from the TypeScript sources (through tsx): what every process test runs, no build needed. */
export const CLI = path.join(ROOT, 'scripts/tg-relay-dev.js');
/** The shipped CLI: runs dist/ only (test/integration/package tests it after `npm run build`). */
export const BUILT_CLI = path.join(ROOT, 'bin/tg-relay.js');

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Environment for a child process: only what the test passes, plus PATH/HOME (no stray config). */
export function cleanEnv(env: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'warn' };
  for (const [k, v] of Object.entries(env)) if (v !== undefined) out[k] = v;
  return out;
}

/** Runs `tg-relay <args>` to completion. */
export function runCli(
  args: string[],
  env: Record<string, string | undefined>,
  opts: { timeoutMs?: number; cwd?: string; cli?: string } = {},
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [opts.cli ?? CLI, ...args], {
      env: cleanEnv(env),
      cwd: opts.cwd ?? ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 60_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/**
 * Starts `tg-relay <args>` in the background; output is collected on the returned object.
 * `preload`: a test fixture node loads first (`node -r`), to reach a fault no outside input can.
 */
export function startCli(
  args: string[],
  env: Record<string, string | undefined>,
  opts: { cwd?: string; preload?: string; cli?: string } = {},
): ChildProcess & { output: () => string } {
  const preload = opts.preload ? ['-r', path.join(ROOT, opts.preload)] : [];
  const child = spawn(process.execPath, [...preload, opts.cli ?? CLI, ...args], {
    env: cleanEnv(env),
    cwd: opts.cwd ?? ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  return Object.assign(child, { output: () => out });
}

export function exited(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (child.exitCode !== null || child.signalCode !== null)
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}
