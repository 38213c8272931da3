// Every operation of the spec, by operationId: the compiler refuses a missing one.
import type { OperationHandlers } from "../http/operations.ts";
import type { Services } from "../services/index.ts";
import { creditReportRoutes } from "./credit-reports.ts";
import { datasetRoutes } from "./datasets.ts";
import { lookupRoutes } from "./lookup.ts";
import { pendingRoutes } from "./pending.ts";
import { userDatasetRoutes } from "./user-datasets.ts";
import { userRoutes } from "./users.ts";

export function createHandlers(services: Services): OperationHandlers {
  return {
    ...userRoutes(services),
    ...userDatasetRoutes(services),
    ...datasetRoutes(services),
    ...lookupRoutes(services),
    ...creditReportRoutes(services),
    ...pendingRoutes(),
  };
}
