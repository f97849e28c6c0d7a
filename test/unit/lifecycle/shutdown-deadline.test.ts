/**
 * A drain that never finishes (a black-holed database connection waits minutes for TCP keepalive)
 * ends at the shutdown deadline: exit 1 with an error line, instead of outliving the orchestrator's
 * patience silently. A real process (through tsx), a real SIGTERM.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { shutdownDeadlineMs, SHUTDOWN_GRACE_MS } from '../../../libs/lifecycle/shutdown';
import { TIMER_MAX_MS } from '../../../libs/config/schema';

const ROOT = path.resolve(__dirname, '../../..');

function run(env: Record<string, string>, waitMs: number): Promise<{ code: number | null; signal: NodeJS.Signals | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--require', 'tsx/cjs', 'test/fixtures/stuck-drain.ts'], { cwd: ROOT, env: { ...process.env, ...env } });
    let out = '';
    let killer: NodeJS.Timeout | undefined;
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('stuck-drain ready') && !killer) {
        child.kill('SIGTERM');
        killer = setTimeout(() => child.kill('SIGKILL'), waitMs);
      }
    });
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearTimeout(killer);
      resolve({ code, signal, out });
    });
  });
}

jest.setTimeout(60_000);

it('a drain stuck past the deadline exits 1 with an error line', async () => {
  const r = await run({ SHUTDOWN_DEADLINE_MS: '300' }, 15_000);
  expect(r).toMatchObject({ code: 1, signal: null });
  expect(r.out).toContain('shutting down: draining');
  expect(r.out).toContain('shutdown did not finish in time');
});

it('without a deadline the same drain never ends (what the deadline is for)', async () => {
  const r = await run({}, 2_000);
  expect(r.signal).toBe('SIGKILL');
  expect(r.out).not.toContain('shutdown did not finish in time');
});

it('the deadline is SHUTDOWN_TIMEOUT plus the grace, never beyond what a timer holds', () => {
  expect(shutdownDeadlineMs({ SHUTDOWN_TIMEOUT: 25_000 })).toBe(25_000 + SHUTDOWN_GRACE_MS);
  expect(shutdownDeadlineMs({ SHUTDOWN_TIMEOUT: TIMER_MAX_MS })).toBe(TIMER_MAX_MS);
});
