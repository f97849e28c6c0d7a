import type { RelayCode } from './codes';

/**
 * The base of every tg-relay error class: a stable `code` from the registry (codes.ts) and the
 * standard `cause` chaining. Subclasses keep their own name, code and fields; `instanceof
 * RelayError` tells tg-relay's errors from anything else thrown.
 */
export abstract class RelayError extends Error {
  abstract readonly code: RelayCode;
  constructor(message?: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}
