// Operations that are in the contract but not built yet: they answer 501 until their issue lands.
import { NotImplementedError } from "../http/errors.ts";
import type { Handler, OperationId } from "../http/operations.ts";

export const pendingOperations = [
  "getSegments",
  "createSegment",
  "updateSegment",
  "deleteSegment",
  "updateSegmentUser",
  "getSegmentPreference",
  "setSegmentPreference",
  "deleteSegmentPreference",
  "updateLeadTags",
  "assignLead",
  "getDatasetExclusions",
  "saveDatasetExclusion",
  "removeDatasetExclusion",
  "validateCustomTrackingDomain",
  "addCustomTrackingDomain",
  "updateCustomTrackingDomain",
] as const satisfies readonly OperationId[];

type Pending = (typeof pendingOperations)[number];

export function pendingRoutes(): { [K in Pending]: Handler<K> } {
  const entries = pendingOperations.map((id) => [id, () => Promise.reject(new NotImplementedError(id))]);
  return Object.fromEntries(entries) as { [K in Pending]: Handler<K> };
}
