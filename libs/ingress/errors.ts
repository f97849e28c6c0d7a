/** The fence rejected a write: another replica took the lease (new generation). Nothing was committed. */
import { RelayError } from '../errors/relay-error';
export class LeaseLostError extends RelayError {
  readonly code = 'RELAY_LEASE_LOST';
  constructor(
    readonly botId: string,
    readonly generation: number,
  ) {
    super(`lease of bot ${botId} generation ${generation} is no longer held: the write was fenced and rolled back`);
  }
}

/** The process is not the lease owner (webhook answered while standing by). */
export class NotLeaseOwnerError extends RelayError {
  readonly code = 'RELAY_NOT_LEASE_OWNER';
  constructor(botId: string) {
    super(`this replica does not hold the ingress lease of bot ${botId}`);
  }
}
