// A bounded memory for what a process has already done (asked, recorded, counted): values valid
// until a time, the oldest written forgotten first once it holds `capacity` keys.

/** A memory of values, each valid until a time, of at most `capacity` keys (the oldest written forgotten first). */
export function memory<V>(capacity: number) {
  const entries = new Map<string, { value: V; until: number }>();
  return {
    /** The value, while it is valid at `nowMs`. */
    get: (key: string, nowMs: number): V | undefined => {
      const entry = entries.get(key);
      return entry && entry.until > nowMs ? entry.value : undefined;
    },
    set(key: string, value: V, until: number) {
      entries.delete(key);
      entries.set(key, { value, until });
      if (entries.size > capacity) entries.delete(entries.keys().next().value!);
    },
  };
}
