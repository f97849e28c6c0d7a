export { broadcast, broadcastStatus, broadcastsList, broadcastControl, registerAudience } from './broadcast';
export type { BroadcastOptions, CreatedBroadcast, BroadcastStatus, BroadcastState, BroadcastAction } from './broadcast';
export type { BroadcastInput } from './input';
export { BROADCAST_METHODS } from './input';
export { planBroadcast, FREE_BROADCAST_RATE, PAID_MESSAGE_STARS } from './plan';
export type { BroadcastPlan } from './plan';
export {
  BroadcastValidationError,
  BroadcastNotFoundError,
  BroadcastStateError,
  BroadcastKeyConflictError,
} from './errors';
