/**
 * A drain that never finishes (a black-holed database connection waits minutes for TCP keepalive)
 * ends at the shutdown deadline: exit 1 with an error line, instead of outliving the orchestrator's
 * patience silently. A real process (through tsx), a real SIGTERM.
 */
import { spawn } from 'node:child_process';
import { TIMER_MAX_MS } from '../../../libs/config/schema';
import { shutdownDeadlineMs, SHUTDOWN_GRACE_MS } from '../../../libs/lifecycle/shutdown';
import { cleanEnv, exited, ROOT } from '../../support/cli';
import { waitFor } from '../../support/wait-for';

jest.setTimeout(60_000);

async function stuckDrain(env: Record<string, string>): Promise<{ exit: unknown; out: string }> {
  const child = spawn(process.execPath, ['--require', 'tsx/cjs', 'test/fixtures/stuck-drain.ts'], {
    cwd: ROOT,
    env: cleanEnv({ LOG_LEVEL: 'info', SHUTDOWN_GRACE_MS_FOR_TEST: '300', ...env }),
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const killer = setTimeout(() => child.kill('SIGKILL'), 20_000); // the drain never ends by itself
  try {
    await waitFor(() => out.includes('stuck-drain ready'), { what: 'fixture started', timeoutMs: 15_000 });
    child.kill('SIGTERM');
    return { exit: await exited(child), out };
  } finally {
    clearTimeout(killer);
  }
}

it('a drain stuck past the deadline exits 1 with an error line', async () => {
  const { exit, out } = await stuckDrain({});
  expect(exit).toEqual({ code: 1, signal: null });
  expect(out).toContain('shutting down: draining');
  expect(out).toContain('shutdown did not finish in time');
});

it('so does one that waits on nothing alive: it must not exit 0 as if it had drained', async () => {
  const { exit, out } = await stuckDrain({ STUCK_DRAIN_IDLE: '1' });
  expect(exit).toEqual({ code: 1, signal: null });
  expect(out).toContain('shutdown did not finish in time');
});

it('the deadline is SHUTDOWN_TIMEOUT plus the grace, never beyond what a timer holds', () => {
  expect(shutdownDeadlineMs({ SHUTDOWN_TIMEOUT: 25_000 })).toBe(25_000 + SHUTDOWN_GRACE_MS);
  expect(shutdownDeadlineMs({ SHUTDOWN_TIMEOUT: TIMER_MAX_MS })).toBe(TIMER_MAX_MS);
});
