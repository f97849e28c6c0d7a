/**
 * The dashboard's copy of the API shapes (libs/admin/ui/api-types.ts) against the server's own
 * types. The checks are at compile time: `npm run typecheck` fails when they drift apart.
 */
import type { ItemKind as ServerItemKind, ListKind as ServerListKind } from '../../../libs/admin/kinds';
import type {
  BotStats as ServerBotStats,
  KindStats as ServerKindStats,
  Stats as ServerStats,
} from '../../../libs/admin/stats';
import type { BotRow } from '../../../libs/bots';
import type { BroadcastStatus as ServerBroadcastStatus } from '../../../libs/broadcasts';
import type {
  AttemptTimeseries,
  Bot,
  BroadcastStatus,
  BotStats,
  ItemKind,
  KindStats,
  ListKind,
  Stats,
} from '../../../libs/admin/ui/api-types';
import { KINDS } from '../../../libs/admin/kinds';

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

const sameStats: Same<Stats, ServerStats> = true;
const sameKindStats: Same<KindStats, ServerKindStats> = true;
const sameBotStats: Same<BotStats, ServerBotStats> = true;
const sameItemKind: Same<ItemKind, ServerItemKind> = true;
const sameListKind: Same<ListKind, ServerListKind> = true;
const sameBroadcast: Same<BroadcastStatus, ServerBroadcastStatus> = true;
// /v1/bots answers a BotRow with its dates as ISO text and its version as a number (routes/bots.ts)
type AnsweredBot = Omit<BotRow, 'version' | 'created_at' | 'updated_at'> & {
  version: number;
  created_at: string;
  updated_at: string;
};
const sameBot: Same<Bot, AnsweredBot> = true;
const timeseriesKinds: Same<keyof AttemptTimeseries['kinds'], ServerItemKind> = true;

describe('the dashboard API types', () => {
  test('match the server types (checked by tsc) and the kinds the API serves', () => {
    expect([
      sameStats,
      sameKindStats,
      sameBotStats,
      sameItemKind,
      sameListKind,
      timeseriesKinds,
      sameBroadcast,
      sameBot,
    ]).toEqual([true, true, true, true, true, true, true, true]);
    const kinds: ListKind[] = ['captures', 'outbound', 'inbox', 'quarantine'];
    expect(Object.keys(KINDS).sort()).toEqual([...kinds].sort());
  });
});
