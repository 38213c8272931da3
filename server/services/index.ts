// The rules of each tag, built once per app around one database client.
import type { Db } from "../db/database.ts";
import { accessService } from "./access.ts";
import { accountService } from "./accounts.ts";
import { contactService } from "./contacts.ts";
import { creditReportService } from "./credit-reports.ts";
import { creditService } from "./credits.ts";
import { datasetService } from "./datasets.ts";
import { idempotencyService } from "./idempotency.ts";
import { lookupService } from "./lookup.ts";
import { userDatasetService } from "./user-datasets.ts";
import { userService } from "./users.ts";

export interface ServiceOptions {
  /** The time charges, ledger entries and idempotency keys are written at (tests move it). */
  now?: () => Date;
}

export function createServices(db: Db, { now = () => new Date() }: ServiceOptions = {}) {
  const access = accessService(db);
  const contacts = contactService(db);
  const credits = creditService(db);
  const idempotency = idempotencyService(db, now);
  return {
    accounts: accountService(db),
    access,
    users: userService(db, access),
    userDatasets: userDatasetService(db, access),
    datasets: datasetService(db, access),
    contacts,
    credits,
    lookup: lookupService({ contacts, credits, idempotency, now }),
    creditReports: creditReportService(db, access),
  };
}

export type Services = ReturnType<typeof createServices>;
