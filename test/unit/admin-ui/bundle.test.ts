import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { buildUi, UI_DIST, UI_ROOT } from '../../../libs/admin/ui/build';

describe('the committed dashboard bundle', () => {
  test('libs/admin/ui/dist is what `npm run build:ui` makes from libs/admin/ui/src (rebuild and commit it)', async () => {
    const expected = await buildUi();
    expect(fs.readdirSync(UI_DIST).sort()).toEqual([...expected.keys()].sort());
    for (const [name, content] of expected) {
      const committed = fs.readFileSync(path.join(UI_DIST, name), 'utf8');
      // one boolean per file keeps the failure message short: the fix is always the same
      expect({ file: name, upToDate: committed === content }).toEqual({ file: name, upToDate: true });
    }
  });

  test('the bundle holds no server code and no way to write HTML from data', async () => {
    const js = (await buildUi()).get('app.js')!;
    expect(js).not.toMatch(/require\(|node:|process\.env/);
    expect(js).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write/);
  });

  // the browser code has its own tsconfig (DOM types), outside `tsc -p .`; esbuild does not check types
  test('the browser sources type-check (tsc -p libs/admin/ui)', async () => {
    const tsc = require.resolve('typescript/bin/tsc');
    const run = await promisify(execFile)(process.execPath, [tsc, '--noEmit', '-p', UI_ROOT], {
      encoding: 'utf8',
    }).catch((err: Error & { stdout?: string; code?: number }) => ({
      stdout: err.stdout ?? String(err),
      code: err.code,
    }));
    expect(run.stdout).toBe('');
  }, 60_000);
});
