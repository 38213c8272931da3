// Segments: saved lead filters of a dataset with e-mail notification settings, each belonging
// to one user of the account.
import type { components } from "../../generated/openapi.ts";
import type { QueryOf } from "../domain/types.ts";
import type { Db } from "../db/database.ts";
import { NotFound } from "../domain/errors.ts";
import * as segmentEntries from "./segment-entries.ts";
import * as access from "./access.ts";
import { checkFilter, type SegmentFilter } from "./lead-filter.ts";
import { decodeCursor, toPage } from "./paging.ts";

type Schemas = components["schemas"];
export type SegmentDto = Schemas["SmartlistDTO"];
export type NewSegment = Schemas["CreateSegmentRequest"];
export type SegmentChanges = Schemas["UpdateSegmentRequest"];
type EmailPreferences = Schemas["EmailPreferences"];

export type SegmentQuery = QueryOf<"getSegments">;

const defaultEmailPreferences: EmailPreferences = { enabled: false, frequency: "daily" };

const segmentNotFound = (segmentId: number) => new NotFound(`Segment ${segmentId} does not exist`);

const columns = {
  id: true,
  datasetId: true,
  name: true,
  userId: true,
  filters: true,
  emailEnabled: true,
  emailFrequency: true,
  createdAt: true,
  updatedAt: true,
} as const;

type SegmentRow = Awaited<ReturnType<Db["segment"]["findFirstOrThrow"]>>;

/** The stored filter with its keys in the spec's order (jsonb keeps its own order of keys). */
function storedFilter(json: unknown): SegmentFilter {
  const { match, conditions } = json as SegmentFilter; // validated before it was written
  return { match, conditions: conditions.map(({ field, operator, value }) => ({ field, operator, value })) };
}

function toDto(row: Pick<SegmentRow, keyof typeof columns>): SegmentDto {
  return {
    segmentId: row.id,
    name: row.name,
    datasetId: row.datasetId,
    userId: Number(row.userId),
    filters: storedFilter(row.filters),
    emailPreferences: { enabled: row.emailEnabled, frequency: row.emailFrequency },
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

/** The stored columns of e-mail preferences (all of them, or none when not given). */
function emailColumns(preferences: EmailPreferences | undefined) {
  return preferences ? { emailEnabled: preferences.enabled, emailFrequency: preferences.frequency } : {};
}

/** A segment cursor carries the last segment id of the page. */
function readPosition(value: unknown): number | undefined {
  const after = (value as { after?: unknown } | null)?.after;
  return Number.isSafeInteger(after) && (after as number) > 0 ? (after as number) : undefined;
}

/** Deletes the account's segments, as a statement of the caller's batch transaction (the account's deletion). */
export function deleteSegmentsOfAccount(db: Pick<Db, "segment">, accountId: string) {
  return db.segment.deleteMany({ where: { accountId } });
}

/** The leads that match a new or changed filter enter the segment in its transaction (segment-entries.ts). */
export interface SegmentDeps extends segmentEntries.SegmentEntryDeps {
  db: Db;
}

/** One page of a dataset's segments, by id; the acting user must reach the dataset. */
export async function list({ db }: Pick<SegmentDeps, "db">, keyAccountId: string, query: SegmentQuery): Promise<Schemas["GetAllResponseSmartlistDTO"]> {
  const after = decodeCursor(query.cursor, readPosition);
  access.requireKeyAccount(keyAccountId, query.accountId);
  const actor = await access.actor({ db }, query.accountId, query.email);
  await access.reachableDataset({ db }, actor, query.datasetId);
  const limit = query.limit;
  const rows = await db.segment.findMany({
    where: { accountId: query.accountId, datasetId: query.datasetId, ...(after === undefined ? {} : { id: { gt: after } }) },
    orderBy: { id: "asc" },
    take: limit + 1,
    select: columns,
  });
  return toPage(rows.map(toDto), limit, (last) => ({ after: last.segmentId }));
}

/** Creates the segment with the acting user as its user; returns its id. */
export async function create(deps: SegmentDeps, accountId: string, actorEmail: string, input: NewSegment): Promise<number> {
  const { db } = deps;
  checkFilter(input.filters, "body", "filters");
  const actor = await access.actor({ db }, accountId, actorEmail);
  await access.reachableDataset({ db }, actor, input.datasetId);
  // the leads that match already enter the new segment, in the same transaction
  const created = await db.$transaction(async (tx) => {
    const segment = await tx.segment.create({
      data: {
        accountId,
        datasetId: input.datasetId,
        name: input.name,
        nameKey: input.name.toLowerCase(),
        userId: actor.userId,
        filters: input.filters,
        ...emailColumns(input.emailPreferences ?? defaultEmailPreferences),
      },
      select: { id: true },
    });
    await segmentEntries.evaluate(deps, tx, { accountId, datasetId: input.datasetId, segmentIds: [segment.id] });
    return segment;
  });
  segmentEntries.committed(deps);
  return created.id;
}

/** Renames the segment and replaces the filters and e-mail preferences that are given. */
export async function update(deps: SegmentDeps, accountId: string, segmentId: number, name: string, changes: SegmentChanges): Promise<void> {
  const { db } = deps;
  if (changes.filters) checkFilter(changes.filters, "body", "filters");
  const updated = await db.$transaction(async (tx) => {
    const rows = await tx.segment.updateManyAndReturn({
      where: { accountId, id: segmentId },
      data: { name, nameKey: name.toLowerCase(), ...(changes.filters && { filters: changes.filters }), ...emailColumns(changes.emailPreferences) },
      select: { datasetId: true },
    });
    // a changed filter may let leads enter (entries are never removed: a lead enters once)
    if (rows[0] && changes.filters) await segmentEntries.evaluate(deps, tx, { accountId, datasetId: rows[0].datasetId, segmentIds: [segmentId] });
    return rows.length;
  });
  if (updated === 0) throw segmentNotFound(segmentId);
  segmentEntries.committed(deps);
}

/** Deletes the segment; the foreign key removes the default-segment preferences that name it. */
export async function remove({ db }: Pick<SegmentDeps, "db">, accountId: string, segmentId: number): Promise<void> {
  const { count } = await db.segment.deleteMany({ where: { accountId, id: segmentId } });
  if (count === 0) throw segmentNotFound(segmentId);
}

/** Makes a member who reaches the segment's dataset the segment's user. */
export async function setUser({ db }: Pick<SegmentDeps, "db">, accountId: string, segmentId: number, userId: number): Promise<void> {
  const segment = await db.segment.findFirst({ where: { accountId, id: segmentId }, select: { datasetId: true } });
  if (!segment) throw segmentNotFound(segmentId);
  await access.member({ db }, accountId, userId);
  await access.requireReach({ db }, accountId, segment.datasetId, [userId]);
  await db.segment.updateMany({ where: { accountId, id: segmentId }, data: { userId: BigInt(userId) } });
}

/** The filters of a segment of the dataset; 404 when the dataset has no such segment. */
export async function filtersOf({ db }: Pick<SegmentDeps, "db">, accountId: string, datasetId: string, segmentId: number): Promise<SegmentFilter> {
  const segment = await db.segment.findFirst({ where: { accountId, datasetId, id: segmentId }, select: { filters: true } });
  if (!segment) throw new NotFound(`Segment ${segmentId} is not a segment of dataset ${datasetId}`);
  return storedFilter(segment.filters);
}
