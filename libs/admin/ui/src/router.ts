import type { ListKind } from '../api-types';

export const LIST_KINDS: readonly ListKind[] = ['captures', 'outbound', 'inbox', 'quarantine'];

export type Route =
  | { name: 'overview' }
  | { name: 'list'; kind: ListKind; params: URLSearchParams }
  | { name: 'detail'; kind: ListKind; id: number }
  | { name: 'audit'; params: URLSearchParams }
  | { name: 'broadcasts'; params: URLSearchParams }
  | { name: 'broadcast'; id: string }
  | { name: 'bots' }
  | { name: 'bot'; id: string }
  | { name: 'bot-add'; params: URLSearchParams }
  | { name: 'sandbox' }
  | { name: 'unknown'; path: string };

/**
 * `#/captures?state=failed`, `#/captures/12`, `#/broadcasts`, `#/broadcasts/7`, `#/bots`,
 * `#/bots/123456`, `#/bots/add` (`?id=123456` to change one), `#/audit`, `#/sandbox`; anything else is the overview.
 */
export function parseHash(hash: string): Route {
  const raw = hash.replace(/^#/, '');
  const [path, query = ''] = raw.split('?', 2);
  const parts = path.split('/').filter(Boolean);
  const params = new URLSearchParams(query);
  if (parts.length === 0 || parts[0] === 'overview') return { name: 'overview' };
  const kind = LIST_KINDS.find((k) => k === parts[0]);
  if (kind && parts.length === 1) return { name: 'list', kind, params };
  if (kind && parts.length === 2 && /^[1-9][0-9]{0,15}$/.test(parts[1]))
    return { name: 'detail', kind, id: Number(parts[1]) };
  if (parts[0] === 'broadcasts' && parts.length === 1) return { name: 'broadcasts', params };
  // broadcast ids are bigints: kept as the digits the API gave
  if (parts[0] === 'broadcasts' && parts.length === 2 && /^[1-9][0-9]{0,17}$/.test(parts[1]))
    return { name: 'broadcast', id: parts[1] };
  if (parts[0] === 'bots' && parts.length === 1) return { name: 'bots' };
  if (parts[0] === 'bots' && parts.length === 2 && parts[1] === 'add') return { name: 'bot-add', params };
  // bot ids as the API takes them (the numeric prefix of a token), kept as text
  if (parts[0] === 'bots' && parts.length === 2 && /^[0-9]{1,20}$/.test(parts[1])) return { name: 'bot', id: parts[1] };
  if (parts[0] === 'audit' && parts.length === 1) return { name: 'audit', params };
  if (parts[0] === 'sandbox' && parts.length === 1) return { name: 'sandbox' };
  return { name: 'unknown', path };
}

export function listHash(kind: ListKind, params: Record<string, string | undefined> | URLSearchParams = {}): string {
  const p =
    params instanceof URLSearchParams
      ? params
      : new URLSearchParams(Object.entries(params).filter((e): e is [string, string] => !!e[1]));
  const q = p.toString();
  return `#/${kind}${q ? `?${q}` : ''}`;
}

export const detailHash = (kind: ListKind, id: number) => `#/${kind}/${id}`;

export const broadcastHash = (id: string) => `#/broadcasts/${id}`;

export const botHash = (id: string) => `#/bots/${id}`;

/** The add form, filled in with bot `id`'s registration (never its token: the form asks for it again). */
export const botChangeHash = (id: string) => `#/bots/add?id=${id}`;
