#!/usr/bin/env node
'use strict';
/**
 * `npm start` runs this first: builds dist/ (tsc -p tsconfig.build.json) when it is missing or older
 * than any source it is built from, so the quick start stays `npm install && npm start`.
 * `--check` only reports (exit 1 when a build is needed).
 */
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const STAMP = path.join(ROOT, 'dist', '.build-stamp');
const SOURCES = ['index.ts', 'apps', 'libs', 'examples', 'tsconfig.json', 'tsconfig.build.json', 'package.json'];

function newest(p) {
  let st;
  try {
    st = fs.statSync(p);
  } catch {
    return 0;
  }
  if (!st.isDirectory()) return /\.(ts|json)$/.test(p) ? st.mtimeMs : 0;
  let max = 0;
  for (const e of fs.readdirSync(p))
    if (e !== 'node_modules' && e !== 'dist') max = Math.max(max, newest(path.join(p, e)));
  return max;
}

function stale() {
  let built;
  try {
    built = fs.statSync(STAMP).mtimeMs;
  } catch {
    return 'dist/ is missing';
  }
  const src = Math.max(...SOURCES.map((s) => newest(path.join(ROOT, s))));
  return src > built ? 'sources changed since the last build' : undefined;
}

const reason = stale();
if (process.argv.includes('--check')) {
  process.stdout.write(reason ? `build needed: ${reason}\n` : 'dist/ is up to date\n');
  process.exit(reason ? 1 : 0);
}
if (reason) {
  process.stderr.write(`tg-relay: building (${reason})…\n`);
  let tsc;
  try {
    tsc = require.resolve('typescript/bin/tsc', { paths: [ROOT] });
  } catch {
    process.stderr.write(
      'tg-relay: cannot build: typescript is not installed (run "npm install" with dev dependencies)\n',
    );
    process.exit(1);
  }
  const r = spawnSync(process.execPath, [tsc, '-p', path.join(ROOT, 'tsconfig.build.json')], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  if (r.status !== 0) process.exit(r.status ?? 1);
  fs.writeFileSync(STAMP, `${new Date().toISOString()}\n`);
}
