// The character rule of the contract (spec/openapi.yaml, info.description "Text"), shared by the
// request validation (server/http/validation.ts) and the tracking collector: C0 and C1 control
// characters (U+0000-U+001F, U+007F-U+009F) and unpaired UTF-16 surrogates are refused in every
// text (the database cannot store U+0000 or a lone surrogate, and no field of this API means
// them). The rule holds for every string of a request, declared or not (object keys, every query
// value, every field of a body), and the spec's patterns stay portable (they compile in Python's
// re and in JavaScript without the u flag, where an unpaired surrogate cannot be named): so it is
// a walk in front of the validator, not a schema keyword.

const forbiddenCharacter = /[\p{Cc}\p{Cs}]/u;
export const TEXT_RULE_MESSAGE = "must not contain control characters (U+0000-U+001F, U+007F-U+009F) or unpaired surrogates";

/** True when a text breaks the character rule. */
export function breaksTextRule(text: string): boolean {
  return forbiddenCharacter.test(text);
}

export type JsonPath = (string | number)[];

/**
 * The paths of the strings (values or object keys) of a JSON value that break the character
 * rule; a refused key is reported instead of what it holds. Iterative: depth costs no stack.
 */
export function textRuleBreaks(value: unknown): JsonPath[] {
  if (!anyTextRuleBreak(value)) return []; // the common case, walked without building a path per value
  const found: JsonPath[] = [];
  const pending: [unknown, JsonPath][] = [[value, []]];
  while (pending.length) {
    const [item, path] = pending.pop()!;
    if (typeof item === "string") {
      if (breaksTextRule(item)) found.push(path);
    } else if (Array.isArray(item)) {
      for (let index = item.length - 1; index >= 0; index -= 1) pending.push([item[index], [...path, index]]);
    } else if (item !== null && typeof item === "object") {
      for (const [key, child] of Object.entries(item).reverse()) {
        if (breaksTextRule(key)) found.push([...path, key]);
        else pending.push([child, [...path, key]]);
      }
    }
  }
  return found;
}

/** `["filters", "conditions", 0, "value"]` -> `filters.conditions[0].value` (empty for the value itself). */
export function joinField(path: JsonPath): string {
  return path.reduce<string>((name, part) => (typeof part === "number" ? `${name}[${part}]` : name ? `${name}.${part}` : part), "");
}

/** True when any string (value or object key) of a JSON value breaks the character rule. Iterative. */
function anyTextRuleBreak(value: unknown): boolean {
  if (typeof value === "string") return breaksTextRule(value);
  if (value === null || typeof value !== "object") return false;
  const pending: unknown[] = [value];
  while (pending.length) {
    const item = pending.pop();
    if (typeof item === "string") {
      if (breaksTextRule(item)) return true;
    } else if (Array.isArray(item)) {
      for (const child of item) pending.push(child);
    } else if (item !== null && typeof item === "object") {
      for (const key in item) {
        if (!Object.hasOwn(item, key)) continue;
        if (breaksTextRule(key)) return true;
        pending.push((item as Record<string, unknown>)[key]);
      }
    }
  }
  return false;
}
