// The collector's batch judged by spec/collector.yaml itself (its Batch schema compiled by Ajv,
// server/contract.ts): no copy of the contract in code. Ajv's findings become the documented
// 400 `invalid_batch` details, one per field, named the way the collector names fields
// (`events.1.url`).
import type { ErrorObject } from "ajv";
import { loadCollectorContract } from "../contract.ts";
import type { InvalidField } from "../domain/errors.ts";

const validate = loadCollectorContract().component("Batch");

/** `/events/1/url` as `events.1.url` (JSON pointer unescaped), `(root)` for the body itself. */
function fieldOf(pointer: string, child?: string): string {
  const parts = pointer.split("/").slice(1).map((s) => s.replaceAll("~1", "/").replaceAll("~0", "~"));
  if (child !== undefined) parts.push(child);
  return parts.length ? parts.join(".") : "(root)";
}

function detailOf(error: ErrorObject): InvalidField {
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case "required":
      return { location: "body", field: fieldOf(error.instancePath, String(params.missingProperty)), message: "is required" };
    case "additionalProperties":
      return { location: "body", field: fieldOf(error.instancePath, String(params.additionalProperty)), message: "is not a field of this object" };
    case "discriminator":
      return { location: "body", field: fieldOf(error.instancePath, String(params.tag)), message: "must be pageview or form" };
    default: {
      // a field name that breaks propertyNames: Ajv reports it on the object, with the name beside
      const name = (error as ErrorObject & { propertyName?: string }).propertyName;
      return { location: "body", field: fieldOf(error.instancePath, name), message: error.message ?? "is invalid" };
    }
  }
}

/** What is wrong with a batch (none when it is one): one detail per field, the first found. */
export function batchErrors(value: unknown): InvalidField[] {
  if (validate(value)) return [];
  const seen = new Set<string>();
  const details: InvalidField[] = [];
  for (const error of validate.errors ?? []) {
    if (error.keyword === "propertyNames") continue; // its finding is reported beside it, under the name
    const detail = detailOf(error);
    if (seen.has(detail.field)) continue;
    seen.add(detail.field);
    details.push(detail);
  }
  return details;
}
