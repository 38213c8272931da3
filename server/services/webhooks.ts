// Webhooks: a partner's endpoints, their secrets, deliveries and replays. Events are written by
// server/services/webhook-events.ts and delivered by the `webhook` job (server/notify/webhook-job.ts).
import { randomBytes } from "node:crypto";
import type { SecretBox } from "../security/secret-box.ts";
import type { Db } from "../db/database.ts";
import { Conflict, Invalid, NotFound } from "../domain/errors.ts";
import type { QueryOf, Schemas } from "../domain/types.ts";
import { newId } from "../ids.ts";
import type { WebhookConfig } from "../config.ts";
import { deleteEndpoint, insertDelivery, insertEndpoint, requeueDelivery, updateEndpoint } from "../notify/webhook-store.ts";
import { payloadOf, TEST_EVENT } from "./webhook-events.ts";
import type { JobQueue } from "../jobs/queue.ts";
import { checkWebhookUrl } from "../notify/url-check.ts";
import { secretContext } from "../notify/webhook-job.ts";
import { decodeCursor, toPage } from "./paging.ts";

type EndpointRow = Awaited<ReturnType<Db["webhookEndpoint"]["findFirstOrThrow"]>>;

/** At most this many endpoints per account. */
export const MAX_ENDPOINTS = 20;
const MAX_REPLAY = 1000;

export interface WebhookDeps {
  db: Db;
  /** Its requireHttps and allowPrivateAddresses are the endpoint URLs' rules. */
  webhookConfig: WebhookConfig;
  /** Seals endpoint secrets. */
  webhookSecrets: SecretBox;
  jobs: Pick<JobQueue, "enqueue" | "wake">;
  now: () => Date;
}

/** A new signing secret: `whsec_` and 24 random bytes in base64 (what standardwebhooks reads). */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString("base64")}`;
}

function endpointDto(row: EndpointRow): Schemas["WebhookEndpoint"] {
  return {
    endpointId: row.id,
    url: row.url,
    eventTypes: row.eventTypes as Schemas["WebhookEventType"][],
    enabled: row.enabled,
    disabledReason: row.enabled ? null : ((row.disabledReason ?? "manual") as "manual" | "gone" | "failing"),
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

function readPosition(value: unknown): { t: number; id: string } | undefined {
  const v = value as { t?: unknown; id?: unknown } | null;
  return Number.isSafeInteger(v?.t) && typeof v?.id === "string" ? { t: v!.t as number, id: v!.id as string } : undefined;
}

function readSeq(value: unknown): bigint | undefined {
  const after = (value as { after?: unknown } | null)?.after;
  return typeof after === "string" && /^\d{1,19}$/.test(after) ? BigInt(after) : undefined;
}

async function endpointOf({ db }: Pick<WebhookDeps, "db">, accountId: string, endpointId: string): Promise<EndpointRow> {
  const row = await db.webhookEndpoint.findFirst({ where: { id: endpointId, accountId } });
  if (!row) throw new NotFound(`No webhook endpoint ${endpointId} in this account`);
  return row;
}

function requireEnabled(row: EndpointRow): void {
  if (!row.enabled) throw new Conflict(`Webhook endpoint ${row.id} is disabled: enable it first`, "endpoint_disabled");
}

async function deliveryDto({ db }: Pick<WebhookDeps, "db">, row: { seq: bigint; id: string; eventType: string; state: string; createdAt: Date; deliveredAt: Date | null; payload: string }): Promise<Schemas["WebhookDelivery"]> {
  const attempts = await db.webhookAttempt.findMany({ where: { deliverySeq: row.seq }, orderBy: { id: "asc" } });
  return toDelivery(row, attempts);
}

function toDelivery(
  row: { id: string; eventType: string; state: string; createdAt: Date; deliveredAt: Date | null; payload: string },
  attempts: { at: Date; statusCode: number | null; durationMs: number; errorClass: string | null }[],
): Schemas["WebhookDelivery"] {
  return {
    deliveryId: row.id,
    eventType: row.eventType,
    state: row.state as Schemas["WebhookDeliveryState"],
    createdAt: row.createdAt.toISOString(),
    deliveredAt: row.deliveredAt?.toISOString() ?? null,
    payload: JSON.parse(row.payload) as Record<string, unknown>,
    attempts: attempts.map((a) => ({
      at: a.at.toISOString(),
      statusCode: a.statusCode,
      durationMs: a.durationMs,
      errorClass: a.errorClass as Schemas["WebhookAttempt"]["errorClass"],
    })),
  };
}

export async function list(deps: WebhookDeps, accountId: string, { cursor, limit }: QueryOf<"listWebhookEndpoints">): Promise<Schemas["WebhookEndpointPage"]> {
  const after = decodeCursor(cursor, readPosition);
  const rows = await deps.db.webhookEndpoint.findMany({
    where: {
      accountId,
      ...(after
        ? { OR: [{ createdAt: { gt: new Date(after.t) } }, { createdAt: new Date(after.t), id: { gt: after.id } }] }
        : {}),
    },
    orderBy: [{ createdAt: "asc" }, { id: "asc" }],
    take: limit + 1,
  });
  const page = toPage(rows, limit, (last) => ({ t: last.createdAt.getTime(), id: last.id }));
  return { data: page.data.map(endpointDto), nextCursor: page.nextCursor };
}

export async function get(deps: WebhookDeps, accountId: string, endpointId: string): Promise<Schemas["WebhookEndpoint"]> {
  return endpointDto(await endpointOf(deps, accountId, endpointId));
}

export async function create(deps: WebhookDeps, accountId: string, input: Schemas["WebhookEndpointCreate"]): Promise<Schemas["WebhookEndpointWithSecret"]> {
  await checkWebhookUrl(input.url, deps.webhookConfig);
  const id = newId("whe");
  const secret = newWebhookSecret();
  const at = deps.now();
  const row = await deps.db.$transaction(async (tx) => {
    // the account row serialises creates of one account, so the limit holds under concurrency
    await tx.$queryRaw`SELECT 1 FROM "Account" WHERE id = ${accountId} FOR UPDATE`;
    const count = await tx.webhookEndpoint.count({ where: { accountId } });
    if (count >= MAX_ENDPOINTS) throw new Conflict(`The account has ${MAX_ENDPOINTS} webhook endpoints already`);
    const { enabled } = input; // the spec's default (true) is filled in by the validator
    return insertEndpoint(tx, {
      id,
      accountId,
      url: input.url,
      eventTypes: [...new Set(input.eventTypes)],
      enabled,
      disabledReason: enabled ? null : "manual",
      secretSealed: deps.webhookSecrets.seal(secret, secretContext(id)),
      createdAt: at,
      updatedAt: at,
    });
  });
  return { ...endpointDto(row), secret };
}

export async function update(deps: WebhookDeps, accountId: string, endpointId: string, input: Schemas["WebhookEndpointUpdate"]): Promise<Schemas["WebhookEndpoint"]> {
  if (input.url !== undefined) await checkWebhookUrl(input.url, deps.webhookConfig);
  const data = {
    ...(input.url !== undefined ? { url: input.url } : {}),
    ...(input.eventTypes !== undefined ? { eventTypes: [...new Set(input.eventTypes)] } : {}),
    // enabling starts afresh; disabling by hand says so
    ...(input.enabled === true ? { enabled: true, disabledReason: null, failingSince: null } : {}),
    ...(input.enabled === false ? { enabled: false, disabledReason: "manual" } : {}),
    updatedAt: deps.now(),
  };
  if (!(await updateEndpoint(deps.db, accountId, endpointId, data))) throw new NotFound(`No webhook endpoint ${endpointId} in this account`);
  return endpointDto(await endpointOf(deps, accountId, endpointId));
}

export async function remove(deps: WebhookDeps, accountId: string, endpointId: string): Promise<void> {
  if (!(await deleteEndpoint(deps.db, accountId, endpointId))) throw new NotFound(`No webhook endpoint ${endpointId} in this account`);
}

export async function rotateSecret(deps: WebhookDeps, accountId: string, endpointId: string): Promise<Schemas["WebhookSecret"]> {
  const secret = newWebhookSecret();
  const sealed = { secretSealed: deps.webhookSecrets.seal(secret, secretContext(endpointId)), updatedAt: deps.now() };
  if (!(await updateEndpoint(deps.db, accountId, endpointId, sealed))) throw new NotFound(`No webhook endpoint ${endpointId} in this account`);
  return { secret };
}

export async function sendTest(deps: WebhookDeps, accountId: string, endpointId: string): Promise<Schemas["WebhookDelivery"]> {
  const endpoint = await endpointOf(deps, accountId, endpointId);
  requireEnabled(endpoint);
  const at = deps.now();
  const payload = payloadOf(TEST_EVENT, at, { accountId, endpointId, message: "A test event sent on request." });
  const id = await deps.db.$transaction((tx) => insertDelivery(tx, deps.jobs, { accountId, endpointId, type: TEST_EVENT, payload, at }));
  deps.jobs.wake();
  const row = await deps.db.webhookDelivery.findUniqueOrThrow({ where: { id } });
  return toDelivery(row, []);
}

export async function listDeliveries(
  deps: WebhookDeps,
  accountId: string,
  endpointId: string,
  { cursor, limit, state }: QueryOf<"listWebhookDeliveries">,
): Promise<Schemas["WebhookDeliveryPage"]> {
  await endpointOf(deps, accountId, endpointId);
  const after = decodeCursor(cursor, readSeq);
  const rows = await deps.db.webhookDelivery.findMany({
    where: { endpointId, ...(state ? { state } : {}), ...(after !== undefined ? { seq: { lt: after } } : {}) },
    orderBy: { seq: "desc" },
    take: limit + 1,
    include: { attemptLog: { orderBy: { id: "asc" } } },
  });
  const page = toPage(rows, limit, (last) => ({ after: last.seq.toString() }));
  return { data: page.data.map((row) => toDelivery(row, row.attemptLog)), nextCursor: page.nextCursor };
}

export async function replay(deps: WebhookDeps, accountId: string, endpointId: string, deliveryId: string): Promise<Schemas["WebhookDelivery"]> {
  requireEnabled(await endpointOf(deps, accountId, endpointId));
  const found = await deps.db.$transaction((tx) => requeueDelivery(tx, deps.jobs, endpointId, deliveryId));
  if (!found) throw new NotFound(`No delivery ${deliveryId} of webhook endpoint ${endpointId}`);
  deps.jobs.wake();
  return deliveryDto(deps, await deps.db.webhookDelivery.findUniqueOrThrow({ where: { id: deliveryId } }));
}

export async function replayRange(deps: WebhookDeps, accountId: string, endpointId: string, input: Schemas["WebhookReplayRequest"]): Promise<Schemas["WebhookReplayResult"]> {
  const from = new Date(input.from);
  const to = input.to ? new Date(input.to) : deps.now();
  if (!(from < to)) throw new Invalid("Invalid request: from must be before to", [{ location: "body", field: "from", message: "must be before to" }]);
  requireEnabled(await endpointOf(deps, accountId, endpointId));
  const replayed = await deps.db.$transaction(async (tx) => {
    const rows = await tx.webhookDelivery.findMany({
      where: { endpointId, state: input.state ?? "failed", createdAt: { gte: from, lt: to } },
      orderBy: { seq: "asc" },
      take: MAX_REPLAY,
      select: { id: true },
    });
    let count = 0;
    for (const row of rows) if (await requeueDelivery(tx, deps.jobs, endpointId, row.id)) count += 1;
    return count;
  });
  if (replayed) deps.jobs.wake();
  return { replayed };
}
