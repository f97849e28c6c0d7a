import { h, svg } from './dom';
import { fmtTime } from './format';

export interface BarSeries {
  /** What the chart shows, e.g. "Deliveries per minute". */
  label: string;
  points: { at: string; value: number | null }[];
  format: (v: number) => string;
  /** Fixed top of the scale (100 for a percentage); default: the largest value. */
  max?: number;
  tone?: 'ok' | 'bad';
  /** The figure shown next to the label (e.g. the window's total); default: the latest value. */
  headline?: string;
}

const W = 240;
const H = 48;

/**
 * A bar chart small enough for a card. Screen readers get a one-line summary (role="img" with a
 * label); each bar carries a tooltip with its minute and value.
 */
export function barChart(s: BarSeries): HTMLElement {
  const values = s.points.map((p) => p.value ?? 0);
  const max = Math.max(s.max ?? 0, ...values, 1);
  const n = s.points.length;
  const slot = W / Math.max(n, 1);
  const known = s.points.filter((p) => p.value !== null);
  const latest = known.length ? known[known.length - 1].value! : null;
  const peak = known.length ? Math.max(...known.map((p) => p.value!)) : null;
  const summary =
    known.length === 0
      ? `${s.label}: no attempts in the last ${n} minutes`
      : `${s.label}, last ${n} minutes: ${s.headline ? `${s.headline}, ` : ''}latest ${s.format(latest!)}, peak ${s.format(peak!)}`;
  const bars = s.points.map((p, i) => {
    const v = p.value ?? 0;
    const bh = p.value === null ? 0 : Math.max(v > 0 ? 2 : 1, Math.round((v / max) * (H - 2)));
    return svg(
      'rect',
      {
        x: (i * slot + 1).toFixed(1),
        y: H - bh,
        width: Math.max(1, slot - 2).toFixed(1),
        height: bh,
        class: p.value === null ? 'bar empty' : 'bar',
      },
      svg('title', null, `${fmtTime(p.at)}: ${p.value === null ? 'no attempts' : s.format(v)}`),
    );
  });
  return h(
    'figure',
    { class: `chart ${s.tone ?? 'ok'}` },
    h('figcaption', null, s.label, ' ', h('strong', null, s.headline ?? (latest === null ? '—' : s.format(latest)))),
    svg('svg', { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: 'none', role: 'img', 'aria-label': summary }, bars),
  );
}
