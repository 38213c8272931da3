// The rules of each tag, built once per app around one database client.
import type { Db } from "../db/database.ts";
import { accessService } from "./access.ts";
import { accountService } from "./accounts.ts";
import { datasetService } from "./datasets.ts";
import { userDatasetService } from "./user-datasets.ts";
import { userService } from "./users.ts";

export function createServices(db: Db) {
  const access = accessService(db);
  return {
    accounts: accountService(db),
    access,
    users: userService(db, access),
    userDatasets: userDatasetService(db, access),
    datasets: datasetService(db, access),
  };
}

export type Services = ReturnType<typeof createServices>;
