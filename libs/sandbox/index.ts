/** The Telegram-faithful sandbox: Bot API fake, collector fake, their control clients. */
export { createBotApiSandbox } from './bot-api';
export type { BotApiSandbox, BotApiSandboxOptions } from './bot-api';
export { createCollector } from './collector';
export type {
  Collector,
  CollectorAttempt,
  CollectorOptions,
  CollectorOutcome,
  CollectorReceipt,
  CollectorStats,
} from './collector';
export type { CollectorFaultMode, CollectorFaults } from './collector-faults';
export { createCollectorClient, createSandboxClient, SandboxControlError } from './control-client';
export type { CollectorClient, SandboxClient } from './control-client';
export { startSandboxPeers } from './peers';
export type { SandboxPeers } from './peers';
export { DEFAULT_FIRST_UPDATE_ID, SANDBOX_DEFAULT_TOKEN, TG_DESCRIPTIONS } from './constants';
export { DEFAULT_RATE_LIMITS } from './rate-limiter';
export type { RateLimitsInput } from './rate-limiter';
export { SUPPORTED_METHODS } from './methods';
export * from './types';
