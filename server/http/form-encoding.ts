// Query strings and paths as clients send them: application/x-www-form-urlencoded (`+` is a
// space), percent-encoded UTF-8, and the parameters named when they do not decode.
import type { Contract } from "../contract.ts";
import type { InvalidField } from "../domain/errors.ts";

/** `a=1&b=x+y` -> {a: "1", b: "x y"}; a repeated name gives an array. Names that do not decode: malformed. */
export function parseQuery(raw: string): { values: Record<string, string | string[]>; malformed: string[] } {
  // no prototype: `__proto__` and `constructor` are names like any other (unknown ones are refused)
  const values: Record<string, string | string[]> = Object.create(null);
  const malformed: string[] = [];
  for (const pair of raw.split("&")) {
    if (pair === "") continue;
    const at = pair.indexOf("=");
    const [rawName, rawValue] = at < 0 ? [pair, ""] : [pair.slice(0, at), pair.slice(at + 1)];
    const name = decodeFormComponent(rawName);
    const value = decodeFormComponent(rawValue);
    if (name === undefined || value === undefined) {
      malformed.push(name ?? rawName);
      continue;
    }
    const seen = values[name];
    values[name] = seen === undefined ? value : [...(Array.isArray(seen) ? seen : [seen]), value];
  }
  return { values, malformed };
}

export const PERCENT_ENCODING_MESSAGE = "must be percent-encoded UTF-8 (application/x-www-form-urlencoded)";

/**
 * Express's router refuses a path whose parameter is not valid percent-encoded UTF-8 before any
 * operation runs (a URIError with status 400): the operation whose path template matches the raw
 * path, and one detail per parameter that does not decode.
 */
export function malformedPathParameters(contract: Contract, rawPath: string): { operationId?: string; details: InvalidField[] } {
  const segments = rawPath.split("/");
  for (const op of contract.operations) {
    const template = op.path.split("/");
    if (template.length !== segments.length) continue;
    const names = template.map((part, i) => (/^\{.+\}$/.test(part) ? part.slice(1, -1) : part === segments[i] ? null : undefined));
    if (names.includes(undefined)) continue;
    const details = names.flatMap((name, i) =>
      name && decodeFormComponent(segments[i]!.replaceAll("+", "%2B")) === undefined ? [{ location: "path" as const, field: name, message: PERCENT_ENCODING_MESSAGE }] : [],
    );
    if (details.length) return { operationId: op.operationId, details };
  }
  return { details: [{ location: "path", field: "(path)", message: PERCENT_ENCODING_MESSAGE }] };
}

/** application/x-www-form-urlencoded decoding; undefined for bad percent-encoding or invalid UTF-8. */
function decodeFormComponent(text: string): string | undefined {
  try {
    // decodeURIComponent refuses `%zz`, truncated and overlong sequences (`%C0%AF`) and lone surrogates
    return decodeURIComponent(text.replaceAll("+", " "));
  } catch {
    return undefined;
  }
}
