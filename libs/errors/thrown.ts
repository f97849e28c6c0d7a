/**
 * Reading what was thrown: a RELAY_* error, a PostgreSQL error (SQLSTATE `code`, `detail`), a Node
 * errno ('ECONNRESET'), a NATS or fetch error with a `cause`. Thrown values are data of unknown shape
 * (a library may throw a string or null), so every branch reads them through these functions
 * instead of casting: a field is read only once it is known to be there.
 */

/** The `field` of anything thrown, as it is (undefined when absent or when `err` is not an object). */
export function fieldOf(err: unknown, field: string): unknown {
  if (typeof err !== 'object' || err === null || !(field in err)) return undefined;
  const value: unknown = Reflect.get(err, field);
  return value;
}

/** The string `code` of anything thrown, or undefined. */
export function errorCode(err: unknown): string | undefined {
  const code = fieldOf(err, 'code');
  return typeof code === 'string' ? code : undefined;
}

/** Whether `err` carries `code` (or one of `codes`). */
export function hasCode(err: unknown, ...codes: string[]): boolean {
  const code = errorCode(err);
  return code !== undefined && codes.includes(code);
}

/** The string `message` of anything thrown, or undefined. */
export function errorMessage(err: unknown): string | undefined {
  const message = fieldOf(err, 'message');
  return typeof message === 'string' ? message : undefined;
}
