// The webhooks' store: the only module that writes "WebhookEndpoint", "WebhookDelivery" and
// "WebhookAttempt" (reads that make an API page stay in services/webhooks.ts). An endpoint is
// made, changed and removed over the API, its failing run kept by the `webhook` job. A delivery is inserted
// with its `webhook` job in the caller's transaction, settled by the job (webhook-job.ts),
// replayed over the API and deleted by the retention job once settled and old, or by an erasure
// (deleteDeliveriesNaming, with the predicate tracking/write/erasure.ts shares with the export).
import type { Prisma } from "../../generated/prisma/client.ts";
import type { Db } from "../db/database.ts";
import { newId } from "../ids.ts";
import type { JobQueue } from "../jobs/queue.ts";

export const WEBHOOK_JOB = "webhook";

type EndpointChange = Prisma.WebhookEndpointUpdateManyMutationInput;

/** Inserts an endpoint, in `tx` (the caller holds the account's row: the endpoint limit). */
export const insertEndpoint = (tx: Prisma.TransactionClient, data: Prisma.WebhookEndpointUncheckedCreateInput) => tx.webhookEndpoint.create({ data });

/** Changes the account's endpoint; how many rows changed (0: none such). */
export async function updateEndpoint(db: Pick<Db, "webhookEndpoint">, accountId: string, endpointId: string, data: EndpointChange): Promise<number> {
  return (await db.webhookEndpoint.updateMany({ where: { id: endpointId, accountId }, data })).count;
}

/** Removes the account's endpoint with its deliveries; how many rows went (0: none such). */
export async function deleteEndpoint(db: Pick<Db, "webhookEndpoint">, accountId: string, endpointId: string): Promise<number> {
  return (await db.webhookEndpoint.deleteMany({ where: { id: endpointId, accountId } })).count;
}

/** An endpoint answered 2xx: its failing run is over (a statement for a transaction). */
export const endFailingRun = (db: Pick<Prisma.TransactionClient, "webhookEndpoint">, endpointId: string) =>
  db.webhookEndpoint.updateMany({ where: { id: endpointId, failingSince: { not: null } }, data: { failingSince: null } });

/** An attempt failed at `at`: the endpoint's failing run starts now unless it runs already; since when it fails. */
export async function failingSinceOf(tx: Prisma.TransactionClient, endpointId: string, at: Date): Promise<Date> {
  await tx.$executeRaw`UPDATE "WebhookEndpoint" SET "failingSince" = ${at} WHERE id = ${endpointId} AND "failingSince" IS NULL`;
  const current = await tx.webhookEndpoint.findUnique({ where: { id: endpointId }, select: { failingSince: true } });
  return current?.failingSince ?? at;
}

/** Disables an enabled endpoint (once: a conditional update); whether this call disabled it. */
export async function disableEndpoint(tx: Prisma.TransactionClient, endpointId: string, reason: "gone" | "failing", at: Date): Promise<boolean> {
  const changed = await tx.webhookEndpoint.updateMany({ where: { id: endpointId, enabled: true }, data: { enabled: false, disabledReason: reason, updatedAt: at } });
  return changed.count > 0;
}

type Client = Pick<Prisma.TransactionClient, "webhookDelivery" | "$queryRaw"> | Prisma.TransactionClient;
type Enqueue = Pick<JobQueue, "enqueue">;

/** The job of a delivery's n-th sending (replays make new jobs). */
export function deliveryJob(deliveryId: string, replays: number) {
  return { kind: WEBHOOK_JOB, payload: { deliveryId }, dedupeKey: `webhook:${deliveryId}:${replays}` };
}

/** Inserts a delivery for `endpointId` and enqueues its job, in `tx`; the delivery id. */
export async function insertDelivery(
  tx: Prisma.TransactionClient,
  jobs: Enqueue,
  delivery: { accountId: string; endpointId: string; type: string; payload: string; at: Date },
): Promise<string> {
  const id = newId("msg");
  await tx.webhookDelivery.create({
    data: { id, accountId: delivery.accountId, endpointId: delivery.endpointId, eventType: delivery.type, payload: delivery.payload, createdAt: delivery.at },
  });
  await jobs.enqueue(tx, deliveryJob(id, 0));
  return id;
}

/** Marks the delivery pending again and queues a new job for it, in `tx`; false when it is not the endpoint's. */
export async function requeueDelivery(tx: Prisma.TransactionClient, jobs: Enqueue, endpointId: string, deliveryId: string): Promise<boolean> {
  const rows = await tx.$queryRaw<{ replays: number }[]>`
    UPDATE "WebhookDelivery" SET state = 'pending', replays = replays + 1
    WHERE id = ${deliveryId} AND "endpointId" = ${endpointId} RETURNING replays`;
  if (!rows.length) return false;
  await jobs.enqueue(tx, deliveryJob(deliveryId, rows[0]!.replays));
  return true;
}

/** A pending delivery given up on (its endpoint disabled, its job dead): failed, once. */
export function failPendingDelivery(db: Client, delivery: { seq: bigint } | { id: string }) {
  return db.webhookDelivery.updateMany({ where: { ...delivery, state: "pending" }, data: { state: "failed" } });
}

/** What one attempt of a delivery gave. */
export interface AttemptRecord {
  deliverySeq: bigint;
  at: Date;
  statusCode: number | null;
  durationMs: number;
  errorClass: string | null;
}

/** The attempt's row (a statement for a transaction). */
export const recordAttempt = (db: Pick<Prisma.TransactionClient, "webhookAttempt">, attempt: AttemptRecord) => db.webhookAttempt.create({ data: attempt });

/** A delivery answered 2xx (a statement for a transaction). */
export const markDelivered = (db: Pick<Prisma.TransactionClient, "webhookDelivery">, seq: bigint, at: Date) =>
  db.webhookDelivery.update({ where: { seq }, data: { state: "delivered", deliveredAt: at, attempts: { increment: 1 } } });

/** A failed attempt counted; `settled`: no attempt follows (failed). */
export const countFailedAttempt = (tx: Pick<Prisma.TransactionClient, "webhookDelivery">, seq: bigint, settled: boolean) =>
  tx.webhookDelivery.update({ where: { seq }, data: { attempts: { increment: 1 }, ...(settled ? { state: "failed" as const } : {}) } });

/** Deletes the deliveries `naming` selects (a condition on `d`: an erasure's, which names its subject); how many. */
export function deleteDeliveriesNaming(db: Pick<Prisma.TransactionClient, "$executeRaw">, naming: Prisma.Sql): Promise<number> {
  return db.$executeRaw`DELETE FROM "WebhookDelivery" d WHERE ${naming}`;
}

/** Deletes at most `limit` settled deliveries (delivered or failed) created before `before`, with their attempts; how many. */
export function purgeSettledDeliveries(db: Db, before: Date, limit: number): Promise<number> {
  return db.$executeRaw`DELETE FROM "WebhookDelivery" WHERE seq IN (
    SELECT seq FROM "WebhookDelivery" WHERE state IN ('delivered', 'failed') AND "createdAt" < ${before} LIMIT ${limit})`;
}
