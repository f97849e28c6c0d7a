/**
 * Reading a thrown NATS or pg error without casting it: thrown values are data of unknown shape
 * (a library may throw a string or null), so each field is read only once it is known to be there.
 */

/** The `field` of anything thrown, as it is (undefined when absent or when `err` is not an object). */
export function fieldOf(err: unknown, field: string): unknown {
  if (typeof err !== 'object' || err === null || !(field in err)) return undefined;
  const value: unknown = Reflect.get(err, field);
  return value;
}

/** The JetStream API's own error number (`api_error.err_code`), when the error carries one. */
export function apiErrorCode(err: unknown): number | undefined {
  const code = fieldOf(fieldOf(err, 'api_error'), 'err_code');
  return typeof code === 'number' ? code : undefined;
}

/** An error for logs: code and message only (never connection options: they may hold secrets). */
export function short(err: unknown): { name: unknown; code: unknown; message: string } {
  const message = fieldOf(err, 'message');
  return {
    name: fieldOf(err, 'name'),
    code: fieldOf(err, 'code'),
    message: typeof message === 'string' ? message.slice(0, 300) : String(err),
  };
}
