// The world's randomness: one seeded generator (mulberry32, server/seeded-random.ts) with the
// draws the world needs, so that a seed always builds the same world.
import { seededRandom } from "../../server/seeded-random.ts";

export interface Random {
  /** A number in [0, 1). */
  next(): number;
  /** An integer in [min, max], both included. */
  int(min: number, max: number): number;
  chance(probability: number): boolean;
  pick<T>(items: readonly T[]): T;
  /** A copy of `items` in random order (Fisher-Yates). */
  shuffled<T>(items: readonly T[]): T[];
  /** 1 + the number of failures before a success of `probability`, at most `max`. */
  geometric(probability: number, max: number): number;
  /** `bytes` random bytes as hex. */
  hex(bytes: number): string;
}

export function createRandom(seed: number): Random {
  const next = seededRandom(seed);
  const int = (min: number, max: number) => min + Math.floor(next() * (max - min + 1));
  return {
    next,
    int,
    chance: (probability) => next() < probability,
    pick<T>(items: readonly T[]): T {
      if (!items.length) throw new Error("pick from an empty list");
      return items[Math.floor(next() * items.length)]!;
    },
    shuffled<T>(items: readonly T[]): T[] {
      const copy = [...items];
      for (let i = copy.length - 1; i > 0; i--) {
        const j = Math.floor(next() * (i + 1));
        [copy[i], copy[j]] = [copy[j]!, copy[i]!];
      }
      return copy;
    },
    geometric(probability, max) {
      let n = 1;
      while (n < max && next() >= probability) n += 1;
      return n;
    },
    hex: (bytes) => Array.from({ length: bytes }, () => int(0, 255).toString(16).padStart(2, "0")).join(""),
  };
}

/** A seed derived from a seed and a name, so that one part of the world does not shift another's draws. */
export function subSeed(seed: number, name: string): number {
  let h = seed >>> 0 ^ 0x9e3779b9;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x85ebca6b) >>> 0;
  return (h ^ (h >>> 13)) >>> 0;
}
