// LeadOperation: HTTP in, service call, HTTP out.
import type { Handler } from "../http/operations.ts";
import type { Services } from "../services/index.ts";

export function leadOperationRoutes({ leadOperations }: Services): {
  updateLeadTags: Handler<"updateLeadTags">;
  assignLead: Handler<"assignLead">;
} {
  return {
    updateLeadTags: async ({ auth, body }) => {
      await leadOperations.updateTags(auth.accountId, body);
      return { status: 204 };
    },
    assignLead: async ({ auth, body }) => {
      await leadOperations.assign(auth.accountId, body);
      return { status: 204 };
    },
  };
}
