/**
 * A tiny element builder. Text always goes in as text nodes (never innerHTML): the dashboard
 * shows strings that Telegram users and remote servers wrote.
 */
export type Child = Node | string | number | null | undefined | false | Child[];
export type Attrs = Record<string, string | number | boolean | null | undefined | ((ev: Event) => void)>;

function append(el: Element, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

function setAttrs(el: Element, attrs: Attrs | null | undefined): void {
  if (!attrs) return;
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (typeof v === 'function') el.addEventListener(k.slice(2).toLowerCase(), v);
    else if (k === 'class') el.setAttribute('class', String(v));
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
}

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs?: Attrs | null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

const SVG_NS = 'http://www.w3.org/2000/svg';
export function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs?: Attrs | null,
  ...children: Child[]
): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG_NS, tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

/**
 * Replaces a container's content (live refresh) and puts the keyboard focus back on the element
 * with the same `data-focus-key`, so that a refresh never throws the operator out of a table.
 */
export function replaceKeepingFocus(container: Element, ...children: Child[]): void {
  const active = document.activeElement as HTMLElement | null;
  const key = active && container.contains(active) ? active.getAttribute('data-focus-key') : null;
  container.replaceChildren();
  append(container, children);
  if (key) {
    const again = container.querySelector<HTMLElement>(`[data-focus-key="${CSS.escape(key)}"]`);
    again?.focus();
  }
}

/** A region whose text screen readers announce (results of actions). */
export function statusRegion(cls = 'status'): HTMLElement {
  return h('div', { role: 'status', 'aria-live': 'polite', class: cls });
}

export function setStatus(region: HTMLElement, kind: 'ok' | 'error' | 'info', ...children: Child[]): void {
  region.dataset.kind = kind;
  region.replaceChildren();
  append(region, children);
}
