// IP and domain look-ups and a lead's visits: HTTP in, service call, HTTP out. The address looked
// up is never logged (the request log holds the path only).
import type { Handler } from "../http/operations.ts";
import type { Services } from "../services/index.ts";

export function trackingRoutes({ tracking }: Services): {
  lookupIp: Handler<"lookupIp">;
  lookupDomain: Handler<"lookupDomain">;
  listLeadVisits: Handler<"listLeadVisits">;
} {
  return {
    lookupIp: async ({ auth, query }) => ({ status: 200, body: await tracking.ipLookup(auth.accountId, query.ip) }),
    lookupDomain: async ({ auth, query }) => ({ status: 200, body: await tracking.domainLookup(auth.accountId, query.domain) }),
    listLeadVisits: async ({ auth, path, query }) => ({
      status: 200,
      body: await tracking.visits(auth.accountId, { ...query, leadId: path.leadId }),
    }),
  };
}
