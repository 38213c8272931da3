// How deep a JSON value nests, measured without recursion: a body of 100,000 nested arrays is
// parsed by JSON.parse, but any recursive walk over it (a character check, a schema validator)
// would overflow the stack. Self-contained, so that any validator can call it before its own walk.

/** The deepest nesting the API accepts in a JSON body or JSON parameter (documented in the spec's "Text"). */
export const MAX_JSON_DEPTH = 32;

/**
 * True when `value` nests objects or arrays more than `maxDepth` levels deep (a scalar is depth 0,
 * `{}` and `[]` depth 1). Stops at the first container past the limit.
 */
export function nestsDeeperThan(value: unknown, maxDepth: number = MAX_JSON_DEPTH): boolean {
  const pending: [unknown, number][] = [[value, 0]];
  while (pending.length) {
    const [item, depth] = pending.pop()!;
    if (item === null || typeof item !== "object") continue;
    if (depth + 1 > maxDepth) return true;
    for (const child of Object.values(item)) pending.push([child, depth + 1]);
  }
  return false;
}

export const TOO_DEEP_MESSAGE = `must not nest objects and arrays more than ${MAX_JSON_DEPTH} levels deep`;
