/**
 * Every relative link in README.md and docs/*.md points to a file that exists, and every #anchor
 * into a markdown file matches one of its headings (GitHub's slugs).
 */
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../../..');
const files = [
  'README.md',
  ...fs
    .readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** GitHub's heading anchor: lowercase, punctuation dropped (but - and _), spaces to -. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchorsOf(file: string): Set<string> {
  const text = fs.readFileSync(path.join(ROOT, file), 'utf8').replace(/```[\s\S]*?```/g, '');
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of text.matchAll(/^#{1,6}\s+(.+?)\s*#*$/gm)) {
    const base = slug(m[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

function linksOf(file: string): string[] {
  const text = fs
    .readFileSync(path.join(ROOT, file), 'utf8')
    .replace(/```[\s\S]*?```/g, '')
    .replace(/`[^`\n]*`/g, '');
  return [...text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]).filter((l) => !/^[a-z]+:/i.test(l));
}

describe('markdown links', () => {
  it('the slug follows GitHub', () => {
    expect(slug('Broadcasts: staged, fed at the pace of sending')).toBe('broadcasts-staged-fed-at-the-pace-of-sending');
    expect(slug('`relay.cursor` — one row per bot')).toBe('relaycursor--one-row-per-bot');
  });

  it.each(files)('%s: every relative link and anchor resolves', (file) => {
    const broken: string[] = [];
    for (const link of linksOf(file)) {
      const [target, anchor] = link.split('#');
      const resolved = target
        ? path.join(path.dirname(path.join(ROOT, file)), decodeURI(target))
        : path.join(ROOT, file);
      if (!fs.existsSync(resolved)) broken.push(`${link}: no such file`);
      else if (anchor && resolved.endsWith('.md') && !anchorsOf(path.relative(ROOT, resolved)).has(anchor))
        broken.push(`${link}: no such heading`);
    }
    expect(broken).toEqual([]);
  });
});
