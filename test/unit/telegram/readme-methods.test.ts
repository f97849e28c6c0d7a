/**
 * The README's table of relayed calls is what users read to know what a handler's call guarantees:
 * it must name every relayed method in its class, and no direct one as relayed.
 */
import fs from 'node:fs';
import path from 'node:path';
import { methodClass, RELAYED_METHODS } from '../../../libs/telegram/methods';

const readme = fs.readFileSync(path.join(__dirname, '../../../README.md'), 'utf8');

/** The backticked names in the README table row whose first cell is `cls`. */
function row(cls: string): Set<string> {
  const line = readme.split('\n').find((l) => l.startsWith(`| ${cls} |`));
  if (!line) throw new Error(`README has no "| ${cls} |" row`);
  const methodsCell = line.split('|')[2];
  return new Set([...methodsCell.matchAll(/`([A-Za-z]+)`/g)].map((m) => m[1]));
}

it.each(['message', 'answer'] as const)(
  'the README row "%s" lists exactly the relayed methods of that class',
  (cls) => {
    const expected = RELAYED_METHODS.filter((m) => methodClass(m) === cls);
    expect([...row(cls)].sort()).toEqual([...expected].sort());
  },
);

it('the README row "direct" names only direct methods', () => {
  for (const m of row('direct')) expect(methodClass(m)).toBe('direct');
});
