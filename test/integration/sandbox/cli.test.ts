/** `tg-relay sandbox` as a real subprocess: start, inject with `sandbox send`, SIGTERM → exit 0. */
import type { ChildProcess } from 'node:child_process';
import { createCollectorClient, createSandboxClient, SANDBOX_DEFAULT_TOKEN } from '../../../libs/sandbox';
import { exited, runCli, startCli } from '../../support/cli';
import { tg } from '../../support/sandbox-helpers';
import { waitFor } from '../../support/wait-for';

describe('tg-relay sandbox (subprocess)', () => {
  let child: (ChildProcess & { output: () => string }) | undefined;

  afterEach(async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited(child);
    }
    child = undefined;
  });

  it('serves both fakes, accepts `sandbox send`, and exits 0 on SIGTERM', async () => {
    child = startCli(['sandbox'], { SANDBOX_PORT: '0', SANDBOX_COLLECTOR_PORT: '0' });
    const out: string = await waitFor(() => (/CAPTURE_URL=(\S+)/.test(child!.output()) ? child!.output() : undefined), {
      timeoutMs: 30_000,
      what: 'sandbox URLs',
    });
    const apiRoot = /TELEGRAM_API_ROOT=(http:\/\/\S+)/.exec(out)![1];
    const captureUrl = /CAPTURE_URL=(http:\/\/\S+)/.exec(out)![1];
    expect(apiRoot).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(captureUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/capture$/);
    expect(out).toContain(`TELEGRAM_BOT_TOKEN=${SANDBOX_DEFAULT_TOKEN}`);
    expect(out).toContain('tg-relay sandbox send');

    const sent = await runCli(['sandbox', 'send', 'hi', '--chat', '4242'], { SANDBOX_URL: apiRoot });
    expect(sent.stderr).toBe('');
    expect(sent.code).toBe(0);
    expect(sent.stdout).toMatch(/^update_id=100000 chat_id=4242 /);

    const updates = await tg(apiRoot, SANDBOX_DEFAULT_TOKEN, 'getUpdates');
    expect(updates.body.result).toEqual([
      expect.objectContaining({
        update_id: 100000,
        message: expect.objectContaining({ text: 'hi', chat: expect.objectContaining({ id: 4242 }) }),
      }),
    ]);
    expect((await createSandboxClient(apiRoot).botState(SANDBOX_DEFAULT_TOKEN)).pending_count).toBe(1);

    // The collector is up as well.
    const cap = await fetch(captureUrl, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'Idempotency-Key': 'k' },
      body: '{}',
    });
    expect(cap.status).toBe(200);
    expect((await createCollectorClient(captureUrl.replace(/\/capture$/, '')).received()).map((r) => r.key)).toEqual([
      'k',
    ]);

    // `sandbox sent` lists what the bot sent.
    await tg(apiRoot, SANDBOX_DEFAULT_TOKEN, 'sendMessage', { chat_id: 4242, text: 'pong' });
    const listed = await runCli(['sandbox', 'sent'], { SANDBOX_URL: apiRoot });
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout.trim())).toMatchObject({ chat_id: 4242, text: 'pong' });

    child.kill('SIGTERM');
    expect(await exited(child)).toEqual({ code: 0, signal: null });
    expect(child.output()).toContain('stopped (SIGTERM)');
  });

  it('validates its environment with messages naming the variable', async () => {
    const bad = await runCli(['sandbox'], { SANDBOX_PORT: 'eighty' });
    expect(bad.code).toBe(78);
    expect(bad.stderr).toContain('SANDBOX_PORT');
    expect(bad.stderr).toContain('"eighty"');
    const badCollector = await runCli(['sandbox'], { SANDBOX_PORT: '0', SANDBOX_COLLECTOR_PORT: '70000' });
    expect(badCollector.code).toBe(78);
    expect(badCollector.stderr).toContain('SANDBOX_COLLECTOR_PORT');
  });

  it('`sandbox send` explains when no sandbox is running, and usage errors exit 2', async () => {
    const down = await runCli(['sandbox', 'send', 'hi'], { SANDBOX_URL: 'http://127.0.0.1:1' });
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/cannot reach the sandbox at http:\/\/127\.0\.0\.1:1/);
    const usage = await runCli(['sandbox', 'send'], {});
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('send needs the message text');
  });

  it('`sandbox press` needs the callback data and the message the button is on (exit 2 otherwise)', async () => {
    const noData = await runCli(['sandbox', 'press', '--message', '5'], {});
    expect(noData.code).toBe(2);
    expect(noData.stderr).toContain("press needs the button's callback data");
    const noMessage = await runCli(['sandbox', 'press', 'colour:red'], {});
    expect(noMessage.code).toBe(2);
    expect(noMessage.stderr).toContain('press needs --message ID');
    const badMessage = await runCli(['sandbox', 'press', 'colour:red', '--message', 'x'], {});
    expect(badMessage.code).toBe(2);
    expect(badMessage.stderr).toContain('--message must be a non-zero integer, got "x"');
  });
});
