-- 0036_ingress_members: the fleet pollers alive now.
-- Why: a poller started without TELEGRAM_BOT_TOKEN serves the registered bots (relay.bots) with
-- others like it. Each one beats here every second and counts the live rows, so every poller
-- computes the same fair share of the bots (each capped at its POLLER_MAX_BOTS) without talking to
-- the others: a new poller is seen at its first beat and the others give up bots for it; a dead one
-- stops beating and its row expires after LEASE_TTL, when its bots' leases have expired too and the
-- survivors take them. Which poller polls which bot is relay.cursor's lease, as in single-bot mode.
create table if not exists relay.ingress_members (
  owner       text primary key,        -- the poller's lease owner id (host/pid/random)
  max_bots    integer not null check (max_bots > 0),
  expires_at  timestamptz not null,    -- last beat + LEASE_TTL
  started_at  timestamptz not null default now()
);
