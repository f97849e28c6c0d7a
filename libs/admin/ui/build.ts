/**
 * Builds the operator dashboard: src/main.ts (and what it imports) bundled by esbuild into
 * dist/app.js, src/index.html and src/style.css copied. The output is committed, so the admin API
 * serves it without a build step at run time; test/unit/admin-ui checks it matches the sources.
 *
 *   npm run build:ui
 */
import fs from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';

export const UI_ROOT = __dirname;
export const UI_SRC = path.join(UI_ROOT, 'src');
export const UI_DIST = path.join(UI_ROOT, 'dist');
const REPO_ROOT = path.resolve(UI_ROOT, '..', '..', '..');
const COPIED = ['index.html', 'style.css'];

/** The dist files as the sources make them today: file name → content. */
export async function buildUi(): Promise<Map<string, string>> {
  const out = await build({
    entryPoints: [path.join(UI_SRC, 'main.ts')],
    // file comments in the bundle are relative to this: the same output from any working directory
    absWorkingDir: REPO_ROOT,
    bundle: true,
    write: false,
    format: 'iife',
    platform: 'browser',
    target: ['chrome109', 'firefox115', 'safari16'],
    charset: 'utf8',
    legalComments: 'none',
    sourcemap: false,
    minify: false,
    logLevel: 'silent',
    banner: { js: '// Built by `npm run build:ui` from libs/admin/ui/src. Do not edit: edit the sources and rebuild.' },
  });
  const files = new Map<string, string>();
  files.set('app.js', out.outputFiles[0].text);
  for (const f of COPIED) files.set(f, fs.readFileSync(path.join(UI_SRC, f), 'utf8'));
  return files;
}

/** Writes dist/ (and removes files the build no longer makes). */
export async function writeUi(): Promise<string[]> {
  const files = await buildUi();
  fs.mkdirSync(UI_DIST, { recursive: true });
  for (const f of fs.readdirSync(UI_DIST)) if (!files.has(f)) fs.rmSync(path.join(UI_DIST, f), { recursive: true });
  for (const [name, content] of files) fs.writeFileSync(path.join(UI_DIST, name), content);
  return [...files.keys()];
}

if (require.main === module) {
  writeUi().then(
    (names) => console.log(`built ${names.map((n) => path.relative(REPO_ROOT, path.join(UI_DIST, n))).join(', ')}`),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
