// Dataset Management: one dataset per tracked website. The only writer of "Dataset" rows: the
// credit limit (credits.ts) and the privacy settings (privacy.ts) are written through updateDataset.
import type { Db } from "../db/database.ts";
import { type PageWeight, type StoredPageWeight, storedPageWeights } from "./lead-score.ts";
import { NotFound } from "../domain/errors.ts";
import { newId } from "../ids.ts";
import * as access from "./access.ts";
import { addAccess } from "./user-datasets.ts";
import type { Schemas } from "../domain/types.ts";

export interface FormTracking {
  formTracking: boolean;
  partialFormTracking: boolean;
  contactEnrichment: boolean;
  allowIpMasking: boolean;
  formInputAttribute: string;
}

type DatasetChange = Parameters<Db["dataset"]["updateMany"]>[0]["data"];

/** Updates a dataset (of the account, when given); how many rows changed (0: none such). */
export async function updateDataset(db: Pick<Db, "dataset">, where: { id: string; accountId?: string }, data: DatasetChange): Promise<number> {
  return (await db.dataset.updateMany({ where, data })).count;
}

export interface DatasetDeps {
  db: Db;
}

/** Updates the account's dataset; 404 when it has none with this id. */
async function update(db: Pick<Db, "dataset">, accountId: string, datasetId: string, data: DatasetChange) {
  if ((await updateDataset(db, { accountId, id: datasetId }, data)) === 0) throw new NotFound(`Dataset ${datasetId} does not exist`);
}

/** The account's datasets, oldest first. */
export function list({ db }: DatasetDeps, accountId: string) {
  return db.dataset.findMany({
    where: { accountId },
    orderBy: [{ createdAt: "asc" }, { id: "asc" }],
    select: { id: true, name: true, domain: true },
  });
}

/** Creates the dataset and gives the listed members access to it; all or nothing. */
export async function create({ db }: DatasetDeps, accountId: string, actorEmail: string, input: Schemas["AddDataset"]): Promise<string> {
  await access.admin({ db }, accountId, actorEmail);
  const id = newId("ds");
  const userIds = input.userIds ?? [];
  await db.$transaction(async (tx) => {
    await access.requireMembers({ db: tx }, accountId, userIds);
    await tx.dataset.create({
      data: { id, accountId, name: input.name, nameKey: input.name.toLowerCase(), domain: input.domain?.toLowerCase() ?? null },
    });
    await addAccess(tx, userIds.map((userId) => ({ accountId, userId: BigInt(userId), datasetId: id })));
  });
  return id;
}

export async function rename({ db }: DatasetDeps, accountId: string, actorEmail: string, datasetId: string, name: string): Promise<void> {
  await access.admin({ db }, accountId, actorEmail);
  await update(db, accountId, datasetId, { name, nameKey: name.toLowerCase() });
}

export async function setFormTracking({ db }: DatasetDeps, accountId: string, actorEmail: string, datasetId: string, settings: Partial<FormTracking>): Promise<void> {
  await access.admin({ db }, accountId, actorEmail);
  await update(db, accountId, datasetId, settings);
}

/** The lead score's page weights, in the order they are tried. */
export async function pageWeights({ db }: DatasetDeps, accountId: string, datasetId: string): Promise<PageWeight[]> {
  const dataset = await db.dataset.findFirst({ where: { accountId, id: datasetId }, select: { pageWeights: true } });
  if (!dataset) throw new NotFound(`Dataset ${datasetId} does not exist`);
  return (dataset.pageWeights as unknown as StoredPageWeight[]).map(({ pattern, weight }) => ({ pattern, weight }));
}

/** Replaces the page weights (scores use them from the next query on). */
export async function setPageWeights({ db }: DatasetDeps, accountId: string, actorEmail: string, datasetId: string, weights: readonly PageWeight[]): Promise<void> {
  await access.admin({ db }, accountId, actorEmail);
  const stored = storedPageWeights(weights);
  await update(db, accountId, datasetId, { pageWeights: stored as unknown as object[] });
}
