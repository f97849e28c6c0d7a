/** How the browser tests launch headless Chromium (Debian's package; CHROMIUM_PATH overrides). */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { waitFor } from './wait-for';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * Where screenshots go: $TMPDIR/tg-relay-dashboard-screenshots (the last run's, for inspection), or
 * docs/ with `UPDATE_SCREENSHOTS=1` (docs/dashboard.md shows them).
 */
export function screenshotFolder(): string {
  const dir = process.env.UPDATE_SCREENSHOTS
    ? path.resolve(__dirname, '../../docs')
    : path.join(os.tmpdir(), 'tg-relay-dashboard-screenshots');
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

/** Waits until the locator's first element's text matches; the error shows the last text seen. */
export async function expectText(locator: ReturnType<Page['locator']>, re: RegExp, timeoutMs = 10_000): Promise<void> {
  let last: string | null = null;
  await waitFor(
    async () => {
      last = await locator.first().textContent({ timeout: 500 });
      return re.test(last ?? '');
    },
    { timeoutMs, what: `text ${re}` },
  ).catch((err: Error) => {
    throw new Error(`${err.message} (last text: ${JSON.stringify(last)})`);
  });
}
