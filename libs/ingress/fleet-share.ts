/**
 * How many bots one fleet poller should hold: the bots spread evenly over the live pollers, each
 * capped at its own POLLER_MAX_BOTS, and what a capped poller cannot take shared by the others.
 * Every poller computes it from the same list of caps, so they agree without talking to each other.
 *
 * `caps` holds every live poller's cap, this one's (`mine`) included. The shares of all pollers add
 * up to at least min(bots, sum of caps): no bot is left unpolled while some poller has room.
 */
export function fairShare(bots: number, caps: readonly number[], mine: number): number {
  const sorted = [...caps].sort((a, b) => a - b);
  let remaining = Math.max(0, bots);
  for (let i = 0; i < sorted.length; i++) {
    const even = Math.ceil(remaining / (sorted.length - i));
    // the smallest caps first: one below the even share takes its cap and leaves the rest to others
    if (sorted[i] >= even) return Math.min(mine, even);
    remaining -= sorted[i];
  }
  return mine; // every poller is capped: each takes all it may
}
