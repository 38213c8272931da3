// LeadOperation: HTTP in, service call, HTTP out.
import type { Handler } from "../http/operations.ts";
import type { Services } from "../services/index.ts";
import * as leadOperations from "../services/lead-operations.ts";

export function leadOperationRoutes(services: Services): {
  updateLeadTags: Handler<"updateLeadTags">;
  assignLead: Handler<"assignLead">;
} {
  return {
    updateLeadTags: async ({ auth, body }) => {
      await leadOperations.updateTags(services, auth.accountId, body);
      return { status: 204 };
    },
    assignLead: async ({ auth, body }) => {
      await leadOperations.assign(services, auth.accountId, body);
      return { status: 204 };
    },
  };
}
