/** What the bridge reads of a thrown NATS error, on libs/errors' readers of thrown values. */
import { fieldOf } from '../errors';

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
