import { AdminError } from './errors';

/** Position after the last row of a page: its time (microseconds since the epoch) and id. */
export interface Keyset {
  us: number;
  id: number;
}

/**
 * Opaque keyset cursors. Lists are ordered newest first by (time, id); a cursor holds the last
 * row's pair so the next page starts strictly after it whatever is inserted meanwhile.
 */
export function encodeCursor(k: Keyset): string {
  return Buffer.from(`${k.us}.${k.id}`, 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string): Keyset {
  const m = /^(\d{1,17})\.(\d{1,17})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  const k = m ? { us: Number(m[1]), id: Number(m[2]) } : undefined;
  // a cursor this API returned holds a row's exact time and id: both safe integers
  if (!k || !Number.isSafeInteger(k.us) || !Number.isSafeInteger(k.id))
    throw new AdminError('RELAY_ADMIN_BAD_CURSOR', 'cursor is not one this API returned', {
      field: 'querystring.cursor',
    });
  return k;
}
