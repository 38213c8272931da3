// Segment entries: a lead that comes to match a segment (a visit, a tag, an assignment, a new or
// changed filter) is recorded once per (segment, lead) by one INSERT ... SELECT ... ON CONFLICT DO
// NOTHING RETURNING per segment: concurrent evaluations cannot record it twice, and only the
// statement that inserted the row sees it returned. Listeners (the instant alert of
// server/notify/segment-alerts.ts, the segment.lead_entered webhook event) run in the same
// transaction, so what they queue exists iff the entries commit; the caller calls `committed(deps)`
// after its commit, which wakes the job queue for it.
import { Prisma, type PrismaClient } from "../../generated/prisma/client.ts";
import type { JobQueue } from "../jobs/queue.ts";
import { notExcluded } from "../domain/exclusions.ts";
import type { IngestResult } from "../tracking/write/write-result.ts";
import { filterSql, type SegmentFilter } from "./lead-filter.ts";

type Tx = Prisma.TransactionClient | PrismaClient;

export interface SegmentEntered {
  segmentId: number;
  accountId: string;
  datasetId: string;
  leadId: string;
  enteredAt: Date;
  /** The segment's alert mail when the lead entered: null when it sends none. */
  mail: "instant" | "daily" | "weekly" | null;
}

export type SegmentEnteredListener = (entries: SegmentEntered[], tx: Tx) => Promise<void>;

export interface EvaluationScope {
  accountId: string;
  datasetId: string;
  /** Only these leads (a visit, a tag); all the dataset's leads when absent (a segment's filter changed). */
  leadIds?: string[];
  /** Only these segments; all the dataset's when absent. */
  segmentIds?: number[];
}

/** The listeners of this process's entries (createServices makes the set and adds the alert and the webhook event). */
export type SegmentEnteredListeners = Set<SegmentEnteredListener>;

export interface SegmentEntryDeps {
  now: () => Date;
  jobs: Pick<JobQueue, "wake">;
  segmentListeners: SegmentEnteredListeners;
}

/** Records the leads of the scope that match a segment they had not entered, and tells the listeners, in `tx`. */
export async function evaluate({ now, segmentListeners }: SegmentEntryDeps, tx: Tx, scope: EvaluationScope): Promise<SegmentEntered[]> {
  if (scope.leadIds && !scope.leadIds.length) return [];
  const segments = await tx.segment.findMany({
    where: { accountId: scope.accountId, datasetId: scope.datasetId, ...(scope.segmentIds && { id: { in: scope.segmentIds } }) },
    select: { id: true, filters: true, emailEnabled: true, emailFrequency: true },
    orderBy: { id: "asc" },
  });
  const at = now();
  const entered: SegmentEntered[] = [];
  for (const segment of segments) {
    const rows = await tx.$queryRaw<{ leadId: string }[]>(Prisma.sql`
      INSERT INTO "SegmentEntry" ("segmentId", "datasetId", "leadId", "accountId", "enteredAt")
      SELECT ${segment.id}, l."datasetId", l."id", l."accountId", ${at}
      FROM "Lead" l
      WHERE l."datasetId" = ${scope.datasetId} AND l."accountId" = ${scope.accountId}
        ${scope.leadIds ? Prisma.sql`AND l."id" = ANY(${scope.leadIds}::text[])` : Prisma.empty}
        AND ${filterSql(segment.filters as unknown as SegmentFilter)} AND ${notExcluded}
      ORDER BY l."id"
      ON CONFLICT ("segmentId", "leadId") DO NOTHING
      RETURNING "leadId"`);
    const mail = segment.emailEnabled ? segment.emailFrequency : null;
    for (const leadId of rows.map((r) => r.leadId).sort()) {
      entered.push({ segmentId: segment.id, accountId: scope.accountId, datasetId: scope.datasetId, leadId, enteredAt: at, mail });
    }
  }
  if (entered.length) for (const listener of segmentListeners) await listener(entered, tx);
  return entered;
}

/** The ingest writer's hook: the batch's created and visited leads, per dataset. */
export async function onIngested(deps: SegmentEntryDeps, result: IngestResult, tx: Prisma.TransactionClient): Promise<void> {
  const byDataset = new Map<string, { accountId: string; datasetId: string; leadIds: string[] }>();
  for (const lead of [...result.leadsCreated, ...result.leadsVisited]) {
    const key = `${lead.accountId}\u0000${lead.datasetId}`;
    const group = byDataset.get(key) ?? { accountId: lead.accountId, datasetId: lead.datasetId, leadIds: [] };
    group.leadIds.push(lead.leadId);
    byDataset.set(key, group);
  }
  for (const scope of byDataset.values()) await evaluate(deps, tx, scope);
}

/** After the transaction that evaluated committed: what its entries queued (alerts, events) runs now. */
export function committed({ jobs }: Pick<SegmentEntryDeps, "jobs">): void {
  jobs.wake();
}

/** `listener` is called with the new entries inside the transaction that recorded them; the answer removes it. */
export function onSegmentEntered({ segmentListeners }: Pick<SegmentEntryDeps, "segmentListeners">, listener: SegmentEnteredListener): () => void {
  segmentListeners.add(listener);
  return () => segmentListeners.delete(listener);
}
