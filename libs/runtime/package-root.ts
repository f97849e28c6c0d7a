/**
 * The installed package's root folder: the same from the TypeScript sources (`libs/runtime`) and
 * from the compiled build (`dist/libs/runtime`), so files shipped beside `dist/` (sql/, the
 * dashboard bundle, package.json) are found from either.
 */
import fs from 'node:fs';
import path from 'node:path';

function findRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json')) && fs.existsSync(path.join(dir, 'sql'))) return dir;
    if (path.dirname(dir) === dir) return path.resolve(from, '../..');
  }
}

export const PACKAGE_ROOT = findRoot(__dirname);

/** `version` from the package's package.json (`tg-relay --version`). */
export function packageVersion(): string {
  return (JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
}
