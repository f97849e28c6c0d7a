import type { Pool } from 'pg';
import type { JobLedger } from '../db/boss';
import type { Config } from '../config';
import type { Logger } from '../observability/logger';
import type { AdminActions } from './actions';
import type { IngressHealthFn, Readiness } from './health';
import type { AdminMetrics } from './metrics';
import type { PendingUpdatesSource } from './webhook-info';

/** Everything the routes use; built once by buildAdminApp. */
export interface AdminContext {
  pool: Pool;
  boss: JobLedger;
  config: Config;
  logger: Logger;
  clock: () => Date;
  /** Written to relay.attempts.worker_id of audit rows: which admin process acted. */
  instanceId: string;
  ingressHealth: IngressHealthFn;
  pendingUpdates?: PendingUpdatesSource;
  readiness: () => Promise<Readiness>;
  metrics: AdminMetrics;
  actions: AdminActions;
  /** Upper bound of one bulk retry call. */
  bulkLimit: number;
}
