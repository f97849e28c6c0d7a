/**
 * What a broadcast request can be refused for, each with its stable code (libs/errors/codes.ts):
 * the admin API answers them as 4xx JSON, library callers branch on `code`.
 */
import { RelayError } from '../errors/relay-error';
import type { OutboundProblem } from '../outbound/errors';

/** The request is not a broadcast we can enqueue (all problems at once). HTTP 400. */
export class BroadcastValidationError extends RelayError {
  readonly code = 'RELAY_BROADCAST_INVALID';
  constructor(
    readonly problems: OutboundProblem[],
    options?: { cause?: unknown },
  ) {
    super(`invalid broadcast: ${problems.map((p) => `${p.field}: ${p.problem}`).join('; ')}`, options);
    this.name = 'BroadcastValidationError';
  }
}

/** No broadcast with this id. HTTP 404. */
export class BroadcastNotFoundError extends RelayError {
  readonly code = 'RELAY_BROADCAST_NOT_FOUND';
  constructor(readonly id: string) {
    super(`broadcast ${id} does not exist`);
    this.name = 'BroadcastNotFoundError';
  }
}

/** pause/resume/cancel of a broadcast in a state that does not allow it. HTTP 409. */
export class BroadcastStateError extends RelayError {
  readonly code = 'RELAY_BROADCAST_STATE';
  constructor(
    readonly id: string,
    readonly action: string,
    readonly state: string,
  ) {
    super(`broadcast ${id} is ${state}: it cannot be ${action}d`);
    this.name = 'BroadcastStateError';
  }
}

/** The idempotency key names a broadcast with another message or audience. HTTP 409. */
export class BroadcastKeyConflictError extends RelayError {
  readonly code = 'RELAY_BROADCAST_KEY_CONFLICT';
  constructor(
    readonly key: string,
    readonly existingId: string,
  ) {
    super(`broadcast key "${key}" is taken by broadcast ${existingId}, created with another request`);
    this.name = 'BroadcastKeyConflictError';
  }
}
