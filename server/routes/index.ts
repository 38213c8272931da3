// Every operation of the spec, by operationId: the compiler refuses a missing one.
import type { OperationHandlers } from "../http/operations.ts";
import type { Services } from "../services/index.ts";
import { trackingDomainRoutes } from "./custom-tracking-domains.ts";
import { datasetRoutes } from "./datasets.ts";
import { leadOperationRoutes } from "./lead-operations.ts";
import { leadRoutes } from "./leads.ts";
import { creditReportRoutes } from "./credit-reports.ts";
import { lookupRoutes } from "./lookup.ts";
import { segmentPreferenceRoutes } from "./segment-preferences.ts";
import { segmentRoutes } from "./segments.ts";
import { userDatasetRoutes } from "./user-datasets.ts";
import { userRoutes } from "./users.ts";
import { trackingRoutes } from "./tracking.ts";
import { webhookRoutes } from "./webhooks.ts";
import { privacyRoutes } from "./privacy.ts";
import { declaredNetworkRoutes } from "./declared-networks.ts";

export function createHandlers(services: Services): OperationHandlers {
  return {
    ...userRoutes(services),
    ...userDatasetRoutes(services),
    ...datasetRoutes(services),
    ...trackingDomainRoutes(services),
    ...segmentRoutes(services),
    ...segmentPreferenceRoutes(services),
    ...leadOperationRoutes(services),
    ...leadRoutes(services),
    ...lookupRoutes(services),
    ...creditReportRoutes(services),
    ...trackingRoutes(services),
    ...webhookRoutes(services),
    ...privacyRoutes(services),
    ...declaredNetworkRoutes(services),
  };
}
