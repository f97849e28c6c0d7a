/** Typed errors of handler sessions and of the handler's own transaction (stable codes, see libs/errors/codes.ts). */
import { RelayError } from '../errors/relay-error';

/**
 * Another attempt wrote the session after this attempt read it (two chats writing one per-user key):
 * this attempt's writes, replies and own SQL roll back and it runs again, not counted against the
 * budget. `retryAttempt` is what the engine looks for (libs/queue/attempt-transaction.ts).
 */
export class SessionConflictError extends RelayError {
  readonly code = 'RELAY_SESSION_CONFLICT';
  readonly retryAttempt = true;
  constructor(readonly key: string) {
    super(`session "${key}" was written by another attempt since this attempt read it; the update runs again`);
    this.name = 'SessionConflictError';
  }
}

/**
 * A session value that cannot be stored as JSON (a function, a cycle, a BigInt, a NUL or lone
 * surrogate in a string): the attempt fails with this error, which names the key, never the value.
 */
export class SessionValueError extends RelayError {
  readonly code = 'RELAY_SESSION_VALUE_INVALID';
  constructor(
    readonly key: string,
    readonly problem: string,
  ) {
    super(`session "${key}" cannot be stored: ${problem}`);
    this.name = 'SessionValueError';
  }
}

/** A session or transaction was asked for where there is no database (a runner built without a pool). */
export class DispatchDatabaseUnavailableError extends RelayError {
  readonly code = 'RELAY_DISPATCH_NO_DATABASE';
  constructor(what: string) {
    super(
      `${what} needs the worker's database: outside a dispatch pass { pool, botId } (sessionStore) or run it in a handler`,
    );
    this.name = 'DispatchDatabaseUnavailableError';
  }
}

/** `dispatch.transaction(ctx)` outside a dispatch attempt (no update whose handled mark it could commit with). */
export class NotInDispatchError extends RelayError {
  readonly code = 'RELAY_DISPATCH_NO_ATTEMPT';
  constructor(what: string) {
    super(`${what} is only available while a handler runs an update (inside a dispatch attempt)`);
    this.name = 'NotInDispatchError';
  }
}
