import type { ChildProcess } from 'node:child_process';
import { freePort } from '../../../libs/db';
import { exited, runCli, startCli } from '../../support/cli';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import { TOKEN } from './support';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
const children: ChildProcess[] = [];

beforeAll(async () => {
  db = await createMigratedDatabase('admin_cli');
});

afterEach(async () => {
  for (const c of children.splice(0)) {
    if (c.exitCode === null && c.signalCode === null) {
      c.kill('SIGKILL');
      await exited(c);
    }
  }
});

afterAll(async () => {
  await db?.drop();
});

async function started(child: ChildProcess & { output: () => string }): Promise<void> {
  await waitFor(
    () => {
      if (child.exitCode !== null) throw new Error(`admin exited early (${child.exitCode}):\n${child.output()}`);
      return child.output().includes('admin API listening');
    },
    { timeoutMs: 30_000, what: 'admin API listening' },
  );
}

describe('tg-relay admin', () => {
  test('refuses a non-loopback host without a token and says why', async () => {
    const r = await runCli(['admin'], { DATABASE_URL: db.url, ADMIN_HOST: '0.0.0.0', ADMIN_PORT: '0' });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(
      /RELAY_ADMIN_INSECURE_BINDING.*refusing to serve the admin API on 0\.0\.0\.0 without a token/,
    );
  });

  test('serves over a real socket with bearer auth, then stops on SIGTERM with exit 0', async () => {
    const port = await freePort();
    const child = startCli(['admin'], {
      DATABASE_URL: db.url,
      ADMIN_TOKEN: TOKEN,
      ADMIN_PORT: String(port),
      LOG_LEVEL: 'info',
      POLL_TIMEOUT: '1s',
    });
    children.push(child);
    await started(child);
    const base = `http://127.0.0.1:${port}`;
    expect((await fetch(`${base}/health/live`)).status).toBe(200);
    const denied = await fetch(`${base}/v1/stats`);
    expect([denied.status, ((await denied.json()) as { code: string }).code]).toEqual([
      401,
      'RELAY_ADMIN_UNAUTHORIZED',
    ]);
    const stats = await fetch(`${base}/v1/stats`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(stats.status).toBe(200);
    expect(((await stats.json()) as { kinds: Record<string, unknown> }).kinds).toHaveProperty('captures');
    const metrics = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(await metrics.text()).toMatch(/^# HELP tg_relay_/m);
    expect(child.output()).not.toContain(TOKEN);
    child.kill('SIGTERM');
    expect(await exited(child)).toEqual({ code: 0, signal: null });
  });

  test('on loopback without a token, prints a token made for this process that then works', async () => {
    const port = await freePort();
    const child = startCli(['admin'], { DATABASE_URL: db.url, ADMIN_PORT: String(port), LOG_LEVEL: 'info' });
    children.push(child);
    await started(child);
    const token = /Authorization: Bearer ([A-Za-z0-9_-]+)/.exec(child.output())?.[1];
    expect(token).toBeDefined();
    const res = await fetch(`http://127.0.0.1:${port}/v1/stats`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
  });
});
