/** The same capture key arrived with different data: evidence is never overwritten. */
import { RelayError } from '../errors/relay-error';
export class CaptureKeyConflictError extends RelayError {
  readonly code = 'RELAY_CAPTURE_KEY_CONFLICT';
  constructor(readonly captureKeys: string[]) {
    super(
      `capture key ${captureKeys[0]}${captureKeys.length > 1 ? ` (and ${captureKeys.length - 1} more)` : ''} already exists with different data; the batch was not committed`,
    );
  }
}
