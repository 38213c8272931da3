// Dataset Management: HTTP in, service call, HTTP out.
import type { Handler } from "../http/operations.ts";
import type { Services } from "../services/index.ts";

export function datasetRoutes({ datasets }: Services): {
  createDataset: Handler<"createDataset">;
  renameDataset: Handler<"renameDataset">;
  updateFormTracking: Handler<"updateFormTracking">;
  getPageWeights: Handler<"getPageWeights">;
  setPageWeights: Handler<"setPageWeights">;
} {
  return {
    createDataset: async ({ auth, query, body }) => ({
      status: 200,
      body: { id: await datasets.create(auth.accountId, query.email, body) },
    }),
    renameDataset: async ({ auth, path, query }) => {
      await datasets.rename(auth.accountId, query.email, path.datasetId, query.humanName);
      return { status: 204 };
    },
    updateFormTracking: async ({ auth, path, query }) => {
      const { email, ...settings } = query;
      await datasets.setFormTracking(auth.accountId, email, path.datasetId, settings);
      return { status: 204 };
    },
    getPageWeights: async ({ auth, path }) => ({ status: 200, body: { weights: await datasets.pageWeights(auth.accountId, path.datasetId) } }),
    setPageWeights: async ({ auth, path, query, body }) => {
      await datasets.setPageWeights(auth.accountId, query.email, path.datasetId, body.weights);
      return { status: 204 };
    },
  };
}
