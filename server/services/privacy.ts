// Privacy: a dataset's consent and retention settings, and the data subject operations (export
// and erasure of everything held about one visitor id or one person's e-mail address). An erasure
// (tracking/privacy/erase-subject.ts: tombstones first, then short steps that never hold the ingest writer
// for long) leaves an audit record with who, when and how much, never the data.
import { Prisma } from "../../generated/prisma/client.ts";
import { Invalid } from "../domain/errors.ts";
import type { QueryOf, Schemas } from "../domain/types.ts";
import { newId, normaliseEmail } from "../ids.ts";
import { toProfile } from "./contacts.ts";
import type { IngestLogConfig } from "../config.ts";
import { eraseSubject } from "../tracking/privacy/erase-subject.ts";
import type { IdentityStore } from "../identity/identities.ts";
import { exportPending, pendingVisitorsOf } from "../tracking/write/pending.ts";
import type { QueueRow } from "../tracking/collect/events.ts";
import { type VisitorsByDataset, waitingEventsOf } from "../tracking/log/waiting-events.ts";
import { carries, deliveriesOf, jsonList, type Subject, visitorIdsOf } from "../tracking/write/erasure.ts";
import * as access from "./access.ts";
import { updateDataset } from "./datasets.ts";
import { decodeCursor, toPage } from "./paging.ts";
import * as webhookEvents from "./webhook-events.ts";
import type { WebhookEventDeps } from "./webhook-events.ts";

export type PrivacySettings = Schemas["PrivacySettings"];
export type ErasureCounts = Schemas["ErasureCounts"];
export type ErasureRecord = Schemas["ErasureRecord"];

/** At most this many visits, form submissions and deliveries per list of an export. */
export const EXPORT_LIMIT = 10_000;

function subjectOf(input: Schemas["DataSubject"]): Subject {
  if ((input.visitorId === undefined) === (input.subjectEmail === undefined)) {
    throw new Invalid("Name exactly one of visitorId and subjectEmail", [
      { location: "body", field: "visitorId", message: "exactly one of visitorId and subjectEmail is required" },
    ]);
  }
  return input.visitorId !== undefined ? { type: "visitor", visitorId: input.visitorId } : { type: "person", email: normaliseEmail(input.subjectEmail!) };
}

function recordDto(row: { id: string; datasetId: string | null; subjectType: string; actorUserId: bigint; requestedAt: Date; counts: unknown }): ErasureRecord {
  return {
    erasureId: row.id,
    datasetId: row.datasetId,
    subjectType: row.subjectType as ErasureRecord["subjectType"],
    actorUserId: Number(row.actorUserId),
    erasedAt: row.requestedAt.toISOString(),
    // receipts recorded before withdrawnVisits was counted read 0
    counts: { withdrawnVisits: 0, ...(row.counts as Partial<ErasureCounts>) } as ErasureCounts,
  };
}

function readPosition(value: unknown): { t: string; id: string } | undefined {
  const { t, id } = (value ?? {}) as { t?: unknown; id?: unknown };
  return typeof t === "string" && !Number.isNaN(Date.parse(t)) && typeof id === "string" ? { t, id } : undefined;
}

const settingsSelect = { id: true, consentMode: true, respectDoNotTrack: true, retentionDays: true } as const;
const settingsDto = (d: { id: string; consentMode: PrivacySettings["consentMode"]; respectDoNotTrack: boolean; retentionDays: number | null }): PrivacySettings => ({
  datasetId: d.id,
  consentMode: d.consentMode,
  respectDoNotTrack: d.respectDoNotTrack,
  retentionDays: d.retentionDays,
});

/** An event waiting in the ingest log, as received. */
function queuedEventDto({ datasetId, receivedAt, event }: QueueRow): Schemas["ExportedQueuedEvent"] {
  const { network } = event;
  return {
    datasetId,
    visitorId: event.visitorId,
    type: event.type,
    receivedAt: receivedAt.toISOString(),
    url: event.url,
    leadId: network.leadId,
    ip: network.ip,
    country: network.country,
    city: network.city,
    ...(event.type === "pageview" ? { referrer: event.referrer ?? null, title: event.title ?? null } : { partial: event.partial ?? false, fields: event.fields }),
  };
}

export interface PrivacyDeps extends WebhookEventDeps {
  /** The JetStream stream the collectors append to, when the service uses one (its waiting events are exported too). */
  ingestLog?: IngestLogConfig;
  /** The identity store: an erasure erases the subject's evidence too. */
  identities?: IdentityStore;
}

/** The datasets an operation reaches: the one named (404 when not the account's), else all of the account's. */
async function datasetsOf(deps: PrivacyDeps, accountId: string, datasetId: string | undefined): Promise<string[]> {
  if (datasetId !== undefined) return [(await access.dataset(deps, accountId, datasetId)).id];
  const all = await deps.db.dataset.findMany({ where: { accountId }, select: { id: true }, orderBy: { id: "asc" } });
  return all.map((d) => d.id);
}

async function exportInDataset({ db }: PrivacyDeps, accountId: string, datasetId: string, subject: Subject, ids: string[]) {
  const visitors = await db.visitor.findMany({ where: { datasetId, id: { in: ids } }, orderBy: { id: "asc" } });
  const exported = [];
  for (const v of visitors) {
    const visits = await db.visit.findMany({ where: { datasetId, visitorId: v.id }, orderBy: [{ at: "asc" }, { id: "asc" }], take: EXPORT_LIMIT + 1 });
    const forms = await db.formSubmission.findMany({ where: { datasetId, visitorId: v.id }, orderBy: [{ at: "asc" }, { id: "asc" }], take: EXPORT_LIMIT + 1 });
    exported.push({
      datasetId,
      visitorId: v.id,
      email: v.email,
      enrichment: v.enrichment,
      firstSeenAt: v.firstSeenAt.toISOString(),
      lastSeenAt: v.lastSeenAt.toISOString(),
      visits: visits.slice(0, EXPORT_LIMIT).map((x) => ({ at: x.at.toISOString(), url: x.url, referrer: x.referrer, title: x.title, leadId: x.leadId, ip: x.ip, country: x.country, city: x.city })),
      formSubmissions: forms.slice(0, EXPORT_LIMIT).map(formDto),
      truncated: visits.length > EXPORT_LIMIT || forms.length > EXPORT_LIMIT,
    });
  }
  const others = subject.type === "person"
    ? await db.$queryRaw<FormRow[]>`SELECT at, url, partial, fields FROM "FormSubmission"
        WHERE "datasetId" = ${datasetId} AND "visitorId" NOT IN ${jsonList(ids)} AND ${carries(Prisma.sql`fields`, subject.email)}
        ORDER BY at, id LIMIT ${EXPORT_LIMIT}`
    : [];
  const deliveries = await db.$queryRaw<{ id: string; eventType: string; createdAt: Date; payload: string }[]>`
    SELECT d.id, d."eventType", d."createdAt", d.payload FROM "WebhookDelivery" d WHERE ${deliveriesOf(accountId, datasetId, ids, subject)}
    ORDER BY d.seq LIMIT ${EXPORT_LIMIT}`;
  return { visitors: exported, others: others.map(formDto), deliveries };
}

export async function settings(deps: PrivacyDeps, accountId: string, actorEmail: string, datasetId: string): Promise<PrivacySettings> {
  await access.admin(deps, accountId, actorEmail);
  const dataset = await access.dataset(deps, accountId, datasetId);
  return settingsDto(dataset);
}

export async function updateSettings(deps: PrivacyDeps, accountId: string, actorEmail: string, datasetId: string, change: Schemas["PrivacySettingsUpdate"]): Promise<PrivacySettings> {
  await access.admin(deps, accountId, actorEmail);
  await access.dataset(deps, accountId, datasetId);
  await updateDataset(deps.db, { id: datasetId, accountId }, change);
  const updated = await deps.db.dataset.findUniqueOrThrow({ where: { id: datasetId, accountId }, select: settingsSelect });
  return settingsDto(updated);
}

/** Erases the subject in every dataset of the scope; the receipt (also the audit record). */
export async function erase(deps: PrivacyDeps, accountId: string, actorEmail: string, input: Schemas["DataSubject"]): Promise<ErasureRecord> {
  const actor = await access.admin(deps, accountId, actorEmail);
  const subject = subjectOf(input);
  const scope = { accountId, datasetIds: await datasetsOf(deps, accountId, input.datasetId), datasetId: input.datasetId ?? null, erasedAt: deps.now() };
  const counts = await eraseSubject(deps.db, scope, subject, deps.identities, (tx, removed, reason) => webhookEvents.onLeadsRemoved(deps, tx, removed, reason));
  const record = await deps.db.privacyErasure.create({
    data: { id: newId("era"), accountId, datasetId: scope.datasetId, subjectType: subject.type, actorUserId: actor.userId, requestedAt: scope.erasedAt, counts: { ...counts } },
  });
  return recordDto(record);
}

/** Everything the erasure of the same subject would erase, as JSON. */
export async function exportSubject(deps: PrivacyDeps, accountId: string, actorEmail: string, input: Schemas["DataSubject"]): Promise<Schemas["DataSubjectExport"]> {
  await access.admin(deps, accountId, actorEmail);
  const subject = subjectOf(input);
  const visitorIds: VisitorsByDataset = new Map();
  for (const datasetId of await datasetsOf(deps, accountId, input.datasetId)) {
    visitorIds.set(datasetId, new Set([...(await visitorIdsOf(deps.db, datasetId, subject)), ...(await pendingVisitorsOf(deps.db, datasetId, subject))]));
  }
  // the log before the tables: an event written meanwhile is then listed twice at worst, never missed
  const waiting = await waitingEventsOf(deps.db, deps.ingestLog, accountId, visitorIds, subject, EXPORT_LIMIT);
  const parts = [];
  const pending = [];
  for (const [datasetId, ids] of visitorIds) {
    parts.push(await exportInDataset(deps, accountId, datasetId, subject, [...ids]));
    pending.push(...(await exportPending(deps.db, datasetId, [...ids], subject, EXPORT_LIMIT)).map((e) => ({ datasetId, ...e })));
  }
  const visitors = parts.flatMap((p) => p.visitors);
  const enriched = [...new Set(visitors.filter((v) => v.enrichment === "enriched" && v.email).map((v) => v.email!))];
  const contacts = enriched.length ? await deps.db.contact.findMany({ where: { email: { in: enriched } }, orderBy: { email: "asc" } }) : [];
  return {
    exportedAt: deps.now().toISOString(),
    visitors,
    otherFormSubmissions: parts.flatMap((p) => p.others),
    contacts: contacts.map(toProfile),
    webhookDeliveries: parts.flatMap((p) => p.deliveries).map((d) => ({ deliveryId: d.id, eventType: d.eventType, createdAt: d.createdAt.toISOString(), payload: d.payload })),
    queuedEvents: waiting.rows.map(queuedEventDto),
    queuedEventsTruncated: !waiting.complete,
    pendingEvents: pending.slice(0, EXPORT_LIMIT),
  };
}

/** The account's erasure records, newest first. */
export async function erasures(deps: PrivacyDeps, accountId: string, query: QueryOf<"listErasures">): Promise<Schemas["ErasurePage"]> {
  await access.admin(deps, accountId, query.email);
  const after = decodeCursor(query.cursor, readPosition);
  const rows = await deps.db.privacyErasure.findMany({
    where: {
      accountId,
      ...(after && { OR: [{ requestedAt: { lt: new Date(after.t) } }, { requestedAt: new Date(after.t), id: { lt: after.id } }] }),
    },
    orderBy: [{ requestedAt: "desc" }, { id: "desc" }],
    take: query.limit + 1,
  });
  return toPage(rows.map(recordDto), query.limit, (last) => ({ t: last.erasedAt, id: last.erasureId }));
}

type FormRow = { at: Date; url: string; partial: boolean; fields: unknown };
const formDto = (f: FormRow) => ({ at: f.at.toISOString(), url: f.url, partial: f.partial, fields: f.fields as Record<string, string> });
