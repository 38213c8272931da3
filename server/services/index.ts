// The rules of each tag, built once per app around one database client.
import type { Db } from "../db/database.ts";
import { accessService } from "./access.ts";
import { accountService } from "./accounts.ts";
import { datasetService } from "./datasets.ts";
import { leadOperationService } from "./lead-operations.ts";
import { leadService } from "./leads.ts";
import { segmentPreferenceService } from "./segment-preferences.ts";
import { segmentService } from "./segments.ts";
import { userDatasetService } from "./user-datasets.ts";
import { userService } from "./users.ts";

export function createServices(db: Db) {
  const access = accessService(db);
  const segments = segmentService(db, access);
  return {
    accounts: accountService(db),
    access,
    users: userService(db, access),
    userDatasets: userDatasetService(db, access),
    datasets: datasetService(db, access),
    segments,
    segmentPreferences: segmentPreferenceService(db, access, segments),
    leadOperations: leadOperationService(db, access),
    leads: leadService(db, access, segments),
  };
}

export type Services = ReturnType<typeof createServices>;
