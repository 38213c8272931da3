// The rules of each tag, built once per app around one database client.
import { loadTrackingDomainConfig, type TrackingDomainConfig } from "../ctd/config.ts";
import type { Db } from "../db/database.ts";
import { createLogger, type Logger } from "../logging.ts";
import { accessService } from "./access.ts";
import { accountService } from "./accounts.ts";
import { certificateJobService } from "./certificate-jobs.ts";
import { trackingDomainService } from "./custom-tracking-domains.ts";
import { datasetService } from "./datasets.ts";
import { leadOperationService } from "./lead-operations.ts";
import { leadService } from "./leads.ts";
import { segmentPreferenceService } from "./segment-preferences.ts";
import { segmentService } from "./segments.ts";
import { userDatasetService } from "./user-datasets.ts";
import { userService } from "./users.ts";

export interface ServiceOptions {
  /** Custom tracking domains; from the environment when not given. */
  trackingDomains?: TrackingDomainConfig;
  logger?: Logger;
}

export function createServices(db: Db, { trackingDomains = loadTrackingDomainConfig(), logger = createLogger() }: ServiceOptions = {}) {
  const access = accessService(db);
  const certificateJobs = certificateJobService(db, { config: trackingDomains, logger });
  const segments = segmentService(db, access);
  return {
    accounts: accountService(db),
    access,
    users: userService(db, access),
    userDatasets: userDatasetService(db, access),
    datasets: datasetService(db, access),
    trackingDomains: trackingDomainService(db, access, trackingDomains, certificateJobs),
    certificateJobs,
    segments,
    segmentPreferences: segmentPreferenceService(db, access, segments),
    leadOperations: leadOperationService(db, access),
    leads: leadService(db, access, segments),
  };
}

export type Services = ReturnType<typeof createServices>;
