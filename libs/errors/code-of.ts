/**
 * The string `code` of anything thrown: a RELAY_* code, a PostgreSQL SQLSTATE ('40001'), a Node errno
 * ('ECONNRESET'), a NATS status. Thrown values are data of unknown shape (a library may throw a
 * string or null), so branches read codes through these two functions instead of casting.
 */
export function errorCode(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null || !('code' in err)) return undefined;
  const code = err.code;
  return typeof code === 'string' ? code : undefined;
}

/** Whether `err` carries `code` (or one of `codes`). */
export function hasCode(err: unknown, ...codes: string[]): boolean {
  const code = errorCode(err);
  return code !== undefined && codes.includes(code);
}
