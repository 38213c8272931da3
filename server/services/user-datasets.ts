// UserDatasets: which members reach which datasets.
import type { Db } from "../db/database.ts";
import { NotFound } from "../domain/errors.ts";
import type { Schemas } from "../domain/types.ts";
import * as access from "./access.ts";
import { removeMemberDefault } from "./segment-preferences.ts";

export type UserDatasetRow = Schemas["AccountUserDatasetDTO"];

export interface DatasetAccess {
  accountId: string;
  userId: bigint;
  datasetId: string;
}

/** Gives members access to datasets, in the caller's transaction (a new member's, a new dataset's). */
export async function addAccess(db: Pick<Db, "userDataset">, rows: readonly DatasetAccess[]): Promise<void> {
  await db.userDataset.createMany({ data: [...rows] });
}

export interface UserDatasetDeps {
  db: Db;
}

/** The datasets the named member reaches: all of the account's for an admin. */
export async function list({ db }: UserDatasetDeps, keyAccountId: string, accountId: string, email: string): Promise<UserDatasetRow[]> {
  access.requireKeyAccount(keyAccountId, accountId);
  const member = await access.memberByEmail({ db }, accountId, email);
  const datasets = await db.dataset.findMany({
    where: member.role === "admin" ? { accountId } : { accountId, users: { some: { userId: member.userId } } },
    select: { id: true, name: true },
    orderBy: [{ createdAt: "asc" }, { id: "asc" }],
  });
  return datasets.map((d) => ({
    accountId,
    userId: Number(member.userId),
    email: member.email,
    datasetId: d.id,
    datasetName: d.name,
  }));
}

/** Gives the member access to the account's dataset (404 for either unknown). */
export async function grant({ db }: UserDatasetDeps, accountId: string, userId: number, datasetId: string): Promise<void> {
  await access.member({ db }, accountId, userId);
  await access.dataset({ db }, accountId, datasetId);
  await addAccess(db, [{ accountId, userId: BigInt(userId), datasetId }]);
}

/**
 * Takes the access away, and with it a member's default segment under the dataset: a default
 * the member can no longer reach would be a dangling preference. (An admin keeps reaching the
 * dataset, so an admin's default stays.)
 */
export async function revoke({ db }: UserDatasetDeps, accountId: string, userId: number, datasetId: string): Promise<void> {
  const where = { accountId, userId: BigInt(userId), datasetId };
  await db.$transaction(async (tx) => {
    // The lock a concurrent setSegmentPreference takes first (segment-preferences.ts): it either
    // committed its default before (removed below) or checks the access after this commits.
    await tx.$queryRaw`SELECT 1 FROM "Dataset" WHERE "id" = ${datasetId} AND "accountId" = ${accountId} FOR NO KEY UPDATE`;
    const { count } = await tx.userDataset.deleteMany({ where });
    if (count === 0) throw new NotFound(`User ${userId} has no access to dataset ${datasetId} to remove`);
    await removeMemberDefault(tx, where);
  });
}
