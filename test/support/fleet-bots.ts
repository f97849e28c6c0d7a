/** Registered bots for the fleet tests: tokens sealed as `tg-relay bots add` seals them, without a getMe each. */
import crypto from 'node:crypto';
import type { Pool } from 'pg';
import { botUpsert, encryptToken, parseTokenKey, type TokenKey } from '../../libs/bots';
import { newBotToken } from './ingress-harness';

export const FLEET_KEY_HEX = crypto.randomBytes(32).toString('hex');
export const FLEET_KEY: TokenKey = parseTokenKey(FLEET_KEY_HEX);

export interface FleetBot {
  botId: string;
  token: string;
}

/** Registers `count` new bots (enabled, no allow-list) and answers their ids and tokens. */
export async function registerBots(pool: Pool, count: number, o: { handlers?: string } = {}): Promise<FleetBot[]> {
  const bots: FleetBot[] = [];
  for (let i = 0; i < count; i++) {
    const { token, botId } = newBotToken();
    await botUpsert(pool, {
      id: botId,
      username: `fleet_${i}_bot`,
      tokenEncrypted: encryptToken(FLEET_KEY, botId, token),
      tokenKeyId: FLEET_KEY.id,
      handlers: o.handlers ?? null,
      captureUrl: null,
      allowedChatIds: [],
      opsChatId: null,
      enabled: true,
      settings: {},
    });
    bots.push({ botId, token });
  }
  return bots;
}

/** Lease owner of each bot now (null: free or expired). */
export async function leaseOwners(pool: Pool, botIds: readonly string[]): Promise<Map<string, string | null>> {
  const { rows } = await pool.query<{ bot_id: string; owner: string | null }>(
    `select b.id as bot_id, case when c.lease_expires_at > clock_timestamp() then c.lease_owner end as owner
       from unnest($1::text[]) b(id) left join relay.cursor c on c.bot_id = b.id`,
    [botIds],
  );
  return new Map(rows.map((r) => [r.bot_id, r.owner]));
}

/** How many inbox rows each bot has, and how many distinct update ids. */
export async function storedPerBot(
  pool: Pool,
  botIds: readonly string[],
): Promise<Map<string, { rows: number; distinct: number }>> {
  const { rows } = await pool.query<{ bot_id: string; n: number; d: number }>(
    `select b.id as bot_id, count(i.id)::int as n, count(distinct i.update_id)::int as d
       from unnest($1::text[]) b(id) left join relay.inbox i on i.bot_id = b.id
      group by b.id`,
    [botIds],
  );
  return new Map(rows.map((r) => [r.bot_id, { rows: r.n, distinct: r.d }]));
}
