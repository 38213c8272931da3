// UserDatasets: HTTP in, service call, HTTP out.
import type { Handler } from "../http/operations.ts";
import type { Services } from "../services/index.ts";

export function userDatasetRoutes({ userDatasets }: Services): {
  getUserDatasets: Handler<"getUserDatasets">;
  addUserDataset: Handler<"addUserDataset">;
  removeUserDataset: Handler<"removeUserDataset">;
} {
  return {
    getUserDatasets: async ({ auth, query }) => ({
      status: 200,
      body: { data: await userDatasets.list(auth.accountId, query.accountId, query.email) },
    }),
    addUserDataset: async ({ auth, body }) => {
      await userDatasets.grant(auth.accountId, body.userId, body.datasetId);
      return { status: 204 };
    },
    removeUserDataset: async ({ auth, body }) => {
      await userDatasets.revoke(auth.accountId, body.userId, body.datasetId);
      return { status: 204 };
    },
  };
}
