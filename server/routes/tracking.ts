// IP and domain look-ups and a lead's visits: HTTP in, service call, HTTP out. The address looked
// up is never logged (the request log holds the path only).
import type { Handler } from "../http/operations.ts";
import type { Services } from "../services/index.ts";
import * as tracking from "../services/tracking.ts";

export function trackingRoutes(services: Services): {
  lookupIp: Handler<"lookupIp">;
  lookupDomain: Handler<"lookupDomain">;
  listLeadVisits: Handler<"listLeadVisits">;
} {
  return {
    lookupIp: async ({ auth, query }) => ({ status: 200, body: await tracking.ipLookup(services, auth.accountId, query.ip) }),
    lookupDomain: async ({ auth, query }) => ({ status: 200, body: await tracking.domainLookup(services, auth.accountId, query.domain) }),
    listLeadVisits: async ({ auth, path, query }) => ({
      status: 200,
      body: await tracking.visits(services, auth.accountId, { ...query, leadId: path.leadId }),
    }),
  };
}
