/**
 * METRICS_PORT /health/ready for ingress: the owner (not halted) and a standby are both ready — a
 * standby is healthy as standby — as long as the loop runs and the database answers.
 */
import type { Pool } from 'pg';
import { databaseProblem, type ReadyCheck } from '../observability/metrics-server';
import type { IngressStatus } from './ingress-component';

export interface IngressReadiness {
  status: IngressStatus;
  stopping: boolean;
  /** How ingress ended, once it has. */
  ended: { reason: string } | null;
  pool: Pool;
  botId: string;
  owner: string;
  ingress: string;
}

export async function ingressReady(r: IngressReadiness): Promise<ReadyCheck> {
  const s = r.status;
  const reasons: string[] = [];
  if (r.stopping) reasons.push('stopping');
  else if (r.ended) reasons.push(`ingress ended (${r.ended.reason})`);
  else if (s.role === 'starting') reasons.push('starting: waiting for the database and its migrations');
  else if (s.role === 'stopped') reasons.push('ingress stopped');
  if (s.halted) reasons.push(`halted by DECODE_POLICY=stop: ${s.halted}`);
  if (s.delivery) reasons.push(s.delivery);
  const db = await databaseProblem(r.pool);
  if (db) reasons.push(db);
  return {
    ready: reasons.length === 0,
    reasons,
    role: s.role,
    bot_id: r.botId,
    owner_id: r.owner,
    ingress: r.ingress,
  };
}
