/**
 * A small seedable PRNG (mulberry32) so fault injection is reproducible: the same seed and the same
 * sequence of calls give the same faults.
 */
export type Rng = () => number;

export function createRng(seed?: number): Rng {
  let state = (seed ?? Math.floor(Math.random() * 0xffffffff)) >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
