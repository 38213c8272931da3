// Leads and segment filters for tests. Leads come from tracking, not from the API: tests insert
// them through the service, as tracking would.
import type { SegmentFilter } from "../../server/services/lead-filter.ts";
import type { NewLead } from "../../server/services/leads.ts";

let counter = 0;

/** A lead with a unique id and a last visit later than every lead made before it. */
export function newLead(fields: Partial<NewLead> = {}): NewLead {
  counter += 1;
  return {
    leadId: `lead_t${String(counter).padStart(6, "0")}`,
    organizationName: `Organisation ${counter}`,
    firstVisitAt: new Date("2025-01-01T00:00:00Z"),
    lastVisitAt: new Date(Date.UTC(2025, 5, 1) + counter * 60_000),
    ...fields,
  };
}

/** A filter of one condition. */
export function where(field: string, operator: string, value: unknown, match: "all" | "any" = "all"): SegmentFilter {
  return { match, conditions: [{ field, operator, value }] } as SegmentFilter;
}
