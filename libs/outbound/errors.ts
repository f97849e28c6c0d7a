/** One thing wrong with a message, named by its field (`text`, `chat_id`, …). */
import { RelayError } from '../errors/relay-error';
import { errorMessage, fieldOf, hasCode } from '../errors/thrown';
export interface OutboundProblem {
  field: string;
  problem: string;
}

/** The message cannot be enqueued as given (all problems at once). Maps to HTTP 400/422. */
export class OutboundValidationError extends RelayError {
  readonly code = 'RELAY_OUTBOUND_INVALID';
  constructor(
    readonly problems: OutboundProblem[],
    options?: { cause?: unknown },
  ) {
    super(`invalid outbound message: ${problems.map((p) => `${p.field}: ${p.problem}`).join('; ')}`, options);
    this.name = 'OutboundValidationError';
  }
}

/** `msg_id` is taken, for good, by a message with a different payload. Maps to HTTP 409. */
export class OutboundConflictError extends RelayError {
  readonly code = 'RELAY_OUTBOUND_CONFLICT';
  constructor(
    readonly msgId: string,
    readonly existing: { id: string; state: string },
    options?: { cause?: unknown },
  ) {
    super(
      `msg_id "${msgId}" already exists with a different payload (outbound id ${existing.id}, state ${existing.state})`,
      options,
    );
    this.name = 'OutboundConflictError';
  }
}

/** SQLSTATEs raised by sql/0004_outbound.sql. */
export const SQLSTATE_OUTBOUND_INVALID = 'TR422';
export const SQLSTATE_OUTBOUND_CONFLICT = 'TR409';

/**
 * Turns an error raised by the SQL functions (TR422 invalid, TR409 conflict) into the typed error;
 * anything else is returned unchanged.
 */
export function fromSqlError(err: unknown, msgId?: string): unknown {
  if (hasCode(err, SQLSTATE_OUTBOUND_INVALID)) {
    const text = (errorMessage(err) ?? '').replace(/^RELAY_OUTBOUND_INVALID:\s*/, '');
    const field = /^([a-z_]+) /.exec(text)?.[1] ?? 'message';
    return new OutboundValidationError([{ field, problem: text }], { cause: err });
  }
  if (hasCode(err, SQLSTATE_OUTBOUND_CONFLICT)) {
    const detail = fieldOf(err, 'detail');
    const m = /existing outbound id (\d+), state (\w+)/.exec(typeof detail === 'string' ? detail : '');
    return new OutboundConflictError(msgId ?? '?', { id: m?.[1] ?? '?', state: m?.[2] ?? '?' }, { cause: err });
  }
  return err;
}
