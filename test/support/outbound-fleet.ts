/**
 * The setup of an outbound test with real worker processes: a migrated database, a pg-boss ledger,
 * a sandbox Bot API with the given limits, and the workers the test starts (killed at the end).
 * The fields are filled in by the jest hooks this registers: read them inside the tests.
 */
import { createBoss } from '../../libs/db';
import type { BossLedger } from '../../libs/db/boss';
import { createBotApiSandbox, type BotApiSandbox } from '../../libs/sandbox';
import { createMigratedDatabase } from './db';
import { killWorker, type WorkerProcess } from './worker-process';

export interface OutboundFleet {
  db: Awaited<ReturnType<typeof createMigratedDatabase>>;
  boss: BossLedger;
  sb: BotApiSandbox;
  /** Worker processes the test started: push them here to have them killed at the end. */
  workers: WorkerProcess[];
}

export function useOutboundFleet(name: string, sandbox: Parameters<typeof createBotApiSandbox>[0]): OutboundFleet {
  const fleet = { workers: [] as WorkerProcess[] } as unknown as OutboundFleet;
  beforeAll(async () => {
    fleet.db = await createMigratedDatabase(name);
    fleet.boss = createBoss(fleet.db.url, { max: 1 });
    fleet.sb = createBotApiSandbox(sandbox);
    await fleet.sb.start();
  });
  afterAll(async () => {
    await Promise.all(fleet.workers.map((w) => killWorker(w)));
    await fleet.sb?.stop();
    await fleet.boss?.stop({ graceful: false, wait: true }).catch(() => undefined);
    await fleet.db?.drop();
  });
  return fleet;
}
