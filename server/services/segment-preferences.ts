// Segment Preference: the default segment of users under a dataset. The database holds the state
// rules: the primary key (userId, datasetId) allows one default per user and dataset, and the
// foreign key (datasetId, segmentId) only a segment of that dataset.
import type { components } from "../../generated/openapi.ts";
import type { Db } from "../db/database.ts";
import { NotFound } from "../domain/errors.ts";
import * as access from "./access.ts";
import type { Member } from "./access.ts";
import * as segments from "./segments.ts";

export type SegmentPreference = components["schemas"]["SegmentPreferenceRequest"];

/**
 * Removes the member's default segment under the dataset, in the caller's transaction (their access
 * to it was taken away); an admin's stays, since an admin still reaches every dataset.
 */
export async function removeMemberDefault(tx: Pick<Db, "segmentPreference">, where: { accountId: string; userId: bigint; datasetId: string }): Promise<void> {
  await tx.segmentPreference.deleteMany({ where: { ...where, member: { role: "member" } } });
}

export interface SegmentPreferenceDeps {
  db: Db;
}

/** The acting user, once the dataset and its segment are known to exist (404 before 403). */
async function actorOnSegment({ db }: SegmentPreferenceDeps, accountId: string, actorEmail: string, datasetId: string, segmentId: number): Promise<Member> {
  const actor = await access.actor({ db }, accountId, actorEmail);
  await access.dataset({ db }, accountId, datasetId);
  await segments.filtersOf({ db }, accountId, datasetId, segmentId);
  return actor;
}

/** Ids of the users whose default segment under the dataset this is, ascending. */
export async function usersOf({ db }: SegmentPreferenceDeps, accountId: string, actorEmail: string, segmentId: number, datasetId: string): Promise<number[]> {
  const actor = await actorOnSegment({ db }, accountId, actorEmail, datasetId, segmentId);
  await access.requireAccess({ db }, actor, datasetId);
  const rows = await db.segmentPreference.findMany({
    where: { datasetId, segmentId },
    select: { userId: true },
    orderBy: { userId: "asc" },
  });
  return rows.map((r) => Number(r.userId));
}

/**
 * State rule 1: the listed users get the segment as default (added or updated), every other
 * user under the dataset loses theirs; in one transaction.
 */
export async function set({ db }: SegmentPreferenceDeps, accountId: string, actorEmail: string, { segmentId, datasetId, userIds }: SegmentPreference): Promise<void> {
  const actor = await actorOnSegment({ db }, accountId, actorEmail, datasetId, segmentId);
  await access.requireMembers({ db }, accountId, userIds);
  await access.requireAccess({ db }, actor, datasetId);
  await access.requireReach({ db }, accountId, datasetId, userIds);
  const ids = userIds.map(BigInt);
  await db.$transaction(async (tx) => {
    // Concurrent calls for one dataset run one after the other, so the outcome is the last
    // call's list rather than a mix of two. NO KEY UPDATE leaves inserts that merely
    // reference the dataset (leads, segments) unblocked. Removing a member's access takes
    // the same lock first (user-datasets.ts): the reach checked below is still true at commit.
    await tx.$queryRaw`SELECT 1 FROM "Dataset" WHERE "id" = ${datasetId} FOR NO KEY UPDATE`;
    // A segment deleted since the checks above is a 404, decided here: KEY SHARE keeps it
    // until commit (a concurrent delete waits for this transaction, or has already won).
    const segment = await tx.$queryRaw<unknown[]>`
      SELECT 1 FROM "Segment" WHERE "datasetId" = ${datasetId} AND "id" = ${segmentId} FOR KEY SHARE`;
    if (segment.length === 0) throw new NotFound(`Segment ${segmentId} does not exist`);
    await access.requireReach({ db: tx }, accountId, datasetId, userIds);
    await tx.segmentPreference.deleteMany({ where: { datasetId, userId: { notIn: ids } } });
    await tx.segmentPreference.updateMany({ where: { datasetId, userId: { in: ids }, NOT: { segmentId } }, data: { segmentId } });
    await tx.segmentPreference.createMany({
      data: ids.map((userId) => ({ accountId, datasetId, userId, segmentId })),
      skipDuplicates: true,
    });
  });
}

/** Removes the default segment of the member named by e-mail under the dataset. */
export async function remove({ db }: SegmentPreferenceDeps, accountId: string, userEmail: string, datasetId: string): Promise<void> {
  await access.dataset({ db }, accountId, datasetId);
  const member = await access.memberByEmail({ db }, accountId, userEmail);
  const { count } = await db.segmentPreference.deleteMany({ where: { datasetId, userId: member.userId } });
  if (count === 0) throw new NotFound(`The user has no default segment under dataset ${datasetId}`);
}
