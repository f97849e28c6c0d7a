/**
 * A strict parser of the Prometheus text exposition format 0.0.4, enough to prove /metrics is
 * valid: every sample belongs to a family declared by # TYPE, names and labels are well formed,
 * values are numbers, histogram buckets are cumulative and end with +Inf = _count.
 */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}
export interface Family {
  name: string;
  type: string;
  help?: string;
  samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+-?\d+)?$/;
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(,|$)/y;

function parseValue(v: string): number {
  if (v === '+Inf') return Infinity;
  if (v === '-Inf') return -Infinity;
  // Prometheus parses values with Go's ParseFloat, which takes NaN in any case; prom-client writes
  // "Nan" (nodejs_eventloop_lag_* between two scrapes closer than the sampling resolution)
  if (/^nan$/i.test(v)) return NaN;
  const n = Number(v);
  if (Number.isNaN(n)) throw new Error(`bad value ${v}`);
  return n;
}

function parseLabels(s: string): Record<string, string> {
  const out: Record<string, string> = {};
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < s.length) {
    const m = LABEL.exec(s);
    if (!m) throw new Error(`bad labels {${s}}`);
    if (m[1] in out) throw new Error(`duplicate label ${m[1]}`);
    out[m[1]] = m[2].replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
  }
  return out;
}

export function parsePrometheus(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const familyOf = (sample: string) => {
    if (families.has(sample)) return families.get(sample)!;
    for (const suffix of ['_bucket', '_sum', '_count']) {
      if (sample.endsWith(suffix)) {
        const f = families.get(sample.slice(0, -suffix.length));
        if (f && (f.type === 'histogram' || f.type === 'summary')) return f;
      }
    }
    throw new Error(`sample ${sample} has no # TYPE`);
  };
  for (const [i, line] of text.split('\n').entries()) {
    if (line.trim() === '') continue;
    if (line.startsWith('# HELP ') || line.startsWith('# TYPE ')) {
      const [, kind, name, ...rest] = line.split(' ');
      if (!NAME.test(name)) throw new Error(`line ${i + 1}: bad metric name ${name}`);
      const f = families.get(name) ?? { name, type: 'untyped', samples: [] };
      if (kind === 'TYPE') {
        if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(rest[0]))
          throw new Error(`line ${i + 1}: bad type ${rest[0]}`);
        if (f.samples.length) throw new Error(`line ${i + 1}: TYPE after samples`);
        f.type = rest[0];
      } else f.help = rest.join(' ');
      families.set(name, f);
      continue;
    }
    if (line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`line ${i + 1}: not a sample: ${line}`);
    familyOf(m[1]).samples.push({ name: m[1], labels: m[3] ? parseLabels(m[3]) : {}, value: parseValue(m[4]) });
  }
  for (const f of families.values()) {
    if (f.type !== 'histogram') continue;
    const series = new Map<string, Sample[]>();
    for (const s of f.samples.filter((x) => x.name.endsWith('_bucket'))) {
      const { le, ...rest } = s.labels;
      if (le === undefined) throw new Error(`${f.name}: bucket without le`);
      const key = JSON.stringify(rest);
      series.set(key, [...(series.get(key) ?? []), s]);
    }
    for (const [key, buckets] of series) {
      let prev = -1;
      for (const b of buckets) {
        if (b.value < prev) throw new Error(`${f.name}${key}: buckets not cumulative`);
        prev = b.value;
      }
      const inf = buckets[buckets.length - 1];
      if (inf.labels.le !== '+Inf') throw new Error(`${f.name}${key}: last bucket is not +Inf`);
      const count = f.samples.find((x) => x.name === `${f.name}_count` && JSON.stringify(x.labels) === key);
      if (!count || count.value !== inf.value) throw new Error(`${f.name}${key}: _count differs from the +Inf bucket`);
    }
  }
  return families;
}
