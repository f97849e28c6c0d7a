export { broadcast, broadcastStatus, broadcastsList, broadcastControl, registerAudience } from './broadcast';
export type { BroadcastOptions, CreatedBroadcast, BroadcastStatus, BroadcastState, BroadcastAction } from './broadcast';
export type { BroadcastInput } from './input';
export { BROADCAST_METHODS } from './input';
export { createBroadcastFeeder, createBroadcastFeederFromConfig, FEED_EVERY_MS } from './feeder';
export type { BroadcastFeeder, BroadcastFeederOptions } from './feeder';
export { feedAhead, FEED_AHEAD_SECONDS, FEED_CHUNK_MAX } from './pace';
export { planBroadcast, FREE_BROADCAST_RATE, PAID_MESSAGE_STARS } from './plan';
export type { BroadcastPlan } from './plan';
export {
  BroadcastValidationError,
  BroadcastNotFoundError,
  BroadcastStateError,
  BroadcastKeyConflictError,
} from './errors';
