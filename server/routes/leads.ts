// Leads (listing and dataset exclusions): HTTP in, service call, HTTP out.
import type { Handler } from "../http/operations.ts";
import type { SegmentFilter } from "../services/lead-filter.ts";
import type { Services } from "../services/index.ts";
import * as leads from "../services/leads.ts";

export function leadRoutes(services: Services): {
  listLeads: Handler<"listLeads">;
  getDatasetExclusions: Handler<"getDatasetExclusions">;
  saveDatasetExclusion: Handler<"saveDatasetExclusion">;
  removeDatasetExclusion: Handler<"removeDatasetExclusion">;
} {
  return {
    listLeads: async ({ auth, query }) => {
      // `filter` is declared as JSON content: the validator has parsed it and checked it against
      // SegmentFilter (the generated type says string, which is what a client sends).
      const filter = query.filter as unknown as SegmentFilter | undefined;
      return { status: 200, body: await leads.list(services, auth.accountId, { ...query, filter }) };
    },
    getDatasetExclusions: async ({ auth, query }) => ({
      status: 200,
      body: { data: await leads.exclusions(services, auth.accountId, query.datasetId, query.type) },
    }),
    saveDatasetExclusion: async ({ auth, body }) => {
      await leads.addExclusion(services, auth.accountId, body);
      return { status: 204 };
    },
    removeDatasetExclusion: async ({ auth, body }) => {
      await leads.removeExclusion(services, auth.accountId, body);
      return { status: 204 };
    },
  };
}
