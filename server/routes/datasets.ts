// Dataset Management: HTTP in, service call, HTTP out.
import type { Handler } from "../http/operations.ts";
import * as datasets from "../services/datasets.ts";
import type { Services } from "../services/index.ts";

export function datasetRoutes(services: Services): {
  createDataset: Handler<"createDataset">;
  renameDataset: Handler<"renameDataset">;
  updateFormTracking: Handler<"updateFormTracking">;
  getPageWeights: Handler<"getPageWeights">;
  setPageWeights: Handler<"setPageWeights">;
} {
  return {
    createDataset: async ({ auth, query, body }) => ({
      status: 200,
      body: { id: await datasets.create(services, auth.accountId, query.email, body) },
    }),
    renameDataset: async ({ auth, path, query }) => {
      await datasets.rename(services, auth.accountId, query.email, path.datasetId, query.humanName);
      return { status: 204 };
    },
    updateFormTracking: async ({ auth, path, query }) => {
      const { email, ...settings } = query;
      await datasets.setFormTracking(services, auth.accountId, email, path.datasetId, settings);
      return { status: 204 };
    },
    getPageWeights: async ({ auth, path }) => ({ status: 200, body: { weights: await datasets.pageWeights(services, auth.accountId, path.datasetId) } }),
    setPageWeights: async ({ auth, path, query, body }) => {
      await datasets.setPageWeights(services, auth.accountId, query.email, path.datasetId, body.weights);
      return { status: 204 };
    },
  };
}
