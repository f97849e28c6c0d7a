/**
 * Typed errors of update dispatch. Each has a stable `code`; causes are chained with `{ cause }`.
 */
import { RelayError } from '../errors/relay-error';

/** The handler (with its error handlers and automatic callback answer) ran longer than HANDLER_TIMEOUT. */
export class HandlerTimeoutError extends RelayError {
  readonly code = 'RELAY_HANDLER_TIMEOUT';
  constructor(readonly timeoutMs: number) {
    super(`handler did not finish within ${timeoutMs} ms (HANDLER_TIMEOUT); its abort signal was fired`);
    this.name = 'HandlerTimeoutError';
  }
}

/** The dispatch was cancelled from outside (worker shutting down, claim lost) before it finished. */
export class DispatchAbortedError extends RelayError {
  readonly code = 'RELAY_DISPATCH_ABORTED';
  constructor(reason?: unknown) {
    super(
      `dispatch aborted${reason instanceof Error ? `: ${reason.message}` : ''}`,
      reason === undefined ? undefined : { cause: reason },
    );
    this.name = 'DispatchAbortedError';
  }
}

/**
 * Why an attempt's signal was aborted, as an Error: the runner aborts it only with its own errors
 * (DispatchAbortedError, HandlerTimeoutError); another reason would be wrapped, not passed on as is.
 */
export function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new DispatchAbortedError(reason);
}

/**
 * A handler called the Bot API after its dispatch was already decided (it kept running after a
 * timeout or abort). The call is refused so that a late reply cannot leave after the retry began.
 */
export class DispatchClosedError extends RelayError {
  readonly code = 'RELAY_DISPATCH_CLOSED';
  constructor(
    readonly method: string,
    what = 'Bot API call',
  ) {
    super(`${what} "${method}" refused: this dispatch attempt is already over (timed out or aborted)`);
    this.name = 'DispatchClosedError';
  }
}

/** `onError(Error, …)` and friends: a catch-all error handler would acknowledge every defect. */
export class CatchAllErrorHandlerError extends RelayError {
  readonly code = 'RELAY_CATCH_ALL_ERROR_HANDLER';
  constructor(what: string) {
    super(
      `refusing to register an error handler for ${what}: it would mark every failing update handled. ` +
        'Register handlers for the specific error classes your bot can recover from.',
    );
    this.name = 'CatchAllErrorHandlerError';
  }
}

/** REPLY_MODE=outbound was asked for but no outbound reply writer is available in this build. */
export class ReplySinkUnavailableError extends RelayError {
  readonly code = 'RELAY_REPLY_SINK_UNAVAILABLE';
  constructor(message: string) {
    super(message);
    this.name = 'ReplySinkUnavailableError';
  }
}

/**
 * A handler's reply that no retry can make valid (REPLY_MODE=outbound): text over 4096 characters,
 * blank, not valid Unicode (a lone surrogate, a NUL), parameters that cannot be stored as JSON, files
 * that cannot be read or total more than OUTBOUND_MAX_UPLOAD. The relayed call (`ctx.reply`,
 * `ctx.replyWithPhoto`…) rejects with it at the call, so the handler can catch it and say
 * something else; if it escapes the handler (and no error handler takes it), the update fails at
 * once (no retry) with this reason. The message names the fields, never the text.
 */
export class InvalidReplyError extends RelayError {
  readonly code = 'RELAY_INVALID_REPLY';
  constructor(
    readonly method: string,
    readonly replyNumber: number,
    readonly problems: { field: string; problem: string }[],
  ) {
    super(
      `reply ${replyNumber} (${method}) refused before it was queued: ${problems.map((p) => `${p.field} ${p.problem}`).join('; ')}`,
    );
    this.name = 'InvalidReplyError';
  }
}

/** telegraf refused an input itself (see `fromTelegraf`); no retry changes that. */
export class TelegrafRefusedError extends RelayError {
  readonly code = 'RELAY_TELEGRAF_REFUSED';
  constructor(message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'TelegrafRefusedError';
  }
}

/**
 * telegraf's own refusals of an input, caught at the boundary and classified: `ctx.reply` on an
 * update without a chat (`Telegraf: "reply" isn't available for "poll"`), an update with no object
 * field (whose message would quote the raw update). Both are deterministic for the update: terminal.
 */
export function fromTelegraf(err: unknown): unknown {
  if (err instanceof TypeError && /^Telegraf: "[^"]{1,64}" isn't available for "[^"]{1,64}"$/.test(err.message)) {
    return new TelegrafRefusedError(err.message.replace(/^Telegraf: /, 'telegraf refused the call: '), err);
  }
  if (err instanceof Error && err.message.startsWith('Cannot determine `updateType` of ')) {
    return new TelegrafRefusedError('telegraf cannot determine the update type (the update has no object field)');
  }
  return err;
}
