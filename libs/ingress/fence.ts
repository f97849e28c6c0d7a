/**
 * The lease's fencing token: who holds a bot's cursor and under which generation. Every cursor
 * write checks both, so a process that lost the lease (paused, partitioned) can no longer write.
 */
export interface Fence {
  owner: string;
  generation: number;
}
