// Lookup API: HTTP in, service call, HTTP out. The e-mail looked up is never logged.
import type { Handler } from "../http/operations.ts";
import type { Services } from "../services/index.ts";
import * as lookup from "../services/lookup.ts";

export function lookupRoutes(services: Services): {
  lookupEmail: Handler<"lookupEmail">;
  lookupEmailByQuery: Handler<"lookupEmailByQuery">;
  bulkLookupEmail: Handler<"bulkLookupEmail">;
} {
  return {
    lookupEmail: async ({ operationId, auth, query, body, header }) => {
      const caller = { ...auth, operation: operationId };
      const request = { ...body, datasetId: query.datasetId };
      const key = header("Idempotency-Key");
      const profile = key ? await lookup.lookupIdempotent(services, caller, request, key) : await lookup.lookup(services, caller, request);
      return { status: 200, body: profile };
    },
    bulkLookupEmail: async ({ operationId, auth, query, body, header }) => {
      const caller = { ...auth, operation: operationId };
      const request = { ...body, datasetId: query.datasetId };
      const key = header("Idempotency-Key");
      return { status: 200, body: key ? await lookup.bulkLookupIdempotent(services, caller, request, key) : await lookup.bulkLookup(services, caller, request) };
    },
    lookupEmailByQuery: async ({ operationId, auth, query }) => ({
      status: 200,
      body: await lookup.lookup(services, { ...auth, operation: operationId }, query),
    }),
  };
}
