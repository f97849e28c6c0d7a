/** A configuration value is missing or invalid. The message names the variable and what it expects. */
import { RelayError } from '../errors/relay-error';
export class ConfigError extends RelayError {
  readonly code = 'RELAY_CONFIG_INVALID';
  constructor(
    message: string,
    readonly problems: { variable: string; problem: string }[] = [],
  ) {
    super(message);
  }
}
