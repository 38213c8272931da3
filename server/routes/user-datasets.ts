// UserDatasets: HTTP in, service call, HTTP out.
import type { Handler } from "../http/operations.ts";
import type { Services } from "../services/index.ts";
import * as userDatasets from "../services/user-datasets.ts";

export function userDatasetRoutes(services: Services): {
  getUserDatasets: Handler<"getUserDatasets">;
  addUserDataset: Handler<"addUserDataset">;
  removeUserDataset: Handler<"removeUserDataset">;
} {
  return {
    getUserDatasets: async ({ auth, query }) => ({
      status: 200,
      body: { data: await userDatasets.list(services, auth.accountId, query.accountId, query.email) },
    }),
    addUserDataset: async ({ auth, body }) => {
      await userDatasets.grant(services, auth.accountId, body.userId, body.datasetId);
      return { status: 204 };
    },
    removeUserDataset: async ({ auth, body }) => {
      await userDatasets.revoke(services, auth.accountId, body.userId, body.datasetId);
      return { status: 204 };
    },
  };
}
