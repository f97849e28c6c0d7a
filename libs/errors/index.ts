export { RELAY_CODES } from './codes';
export type { RelayCode } from './codes';
export { RelayError } from './relay-error';
export { errorCode, errorMessage, fieldOf, hasCode } from './thrown';
