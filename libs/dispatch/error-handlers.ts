import { CatchAllErrorHandlerError } from './errors';

/**
 * What an error handler decides. Only the exact value `'handled'` acknowledges the update; anything
 * else (`'unhandled'`, undefined) passes the error on to the next compatible handler.
 */
export type ErrorHandlerResult = 'handled' | 'unhandled';

/** Any error class, whatever its constructor takes (`never[]`: every parameter list accepts it). */
export type ErrorClass<E> = abstract new (...args: never[]) => E;

/**
 * Typed as async (TypeScript widens `'handled'` to `string` in an async arrow checked against
 * `R | Promise<R>`); a plain function returning the string works the same at run time.
 */
export type ErrorHandler<E, C> = (err: E, ctx: C) => Promise<ErrorHandlerResult>;

interface Entry<C> {
  errorClass: ErrorClass<unknown>;
  handler: ErrorHandler<unknown, C>;
}

export type ErrorHandlingDecision =
  { handled: true; error: unknown } | { handled: false; error: unknown; original?: unknown };

/**
 * Error handlers registered by error class, tried in registration order for errors that are
 * `instanceof` the class. A handler that throws ends the search: recovery failed, and the new error
 * is what gets retried. A catch-all (`Error`, `Object`) is refused.
 */
export class ErrorHandlerRegistry<C> {
  private readonly entries: Entry<C>[] = [];

  register<E>(errorClass: ErrorClass<E>, handler: ErrorHandler<E, C>): void {
    if (typeof errorClass !== 'function' || typeof handler !== 'function') {
      throw new TypeError('onError(ErrorClass, handler): ErrorClass must be a class and handler a function');
    }
    if ((errorClass as unknown) === Error || (errorClass as unknown) === Object) {
      throw new CatchAllErrorHandlerError(errorClass.name);
    }
    this.entries.push({ errorClass, handler: handler as ErrorHandler<unknown, C> });
  }

  get size(): number {
    return this.entries.length;
  }

  async decide(err: unknown, ctx: C): Promise<ErrorHandlingDecision> {
    for (const { errorClass, handler } of this.entries) {
      if (!(err instanceof errorClass)) continue;
      let result: unknown;
      try {
        result = await handler(err, ctx);
      } catch (thrown) {
        return { handled: false, error: thrown, original: err };
      }
      if (result === 'handled') return { handled: true, error: err };
    }
    return { handled: false, error: err };
  }
}
