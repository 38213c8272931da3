// Privacy: a dataset's consent and retention settings, and the data subject operations (export
// and erasure of everything held about one visitor id or one person's e-mail address). An erasure
// runs in one transaction and leaves an audit record with who, when and how much, never the data.
import { Prisma } from "../../generated/prisma/client.ts";
import type { Db } from "../db/database.ts";
import { Invalid } from "../domain/errors.ts";
import type { QueryOf, Schemas } from "../domain/types.ts";
import { newId, normaliseEmail } from "../ids.ts";
import { toProfile } from "./contacts.ts";
import type { Tx } from "../tracking/ingest.ts";
import { holdForErasure, recordTombstones } from "../tracking/erasure-tombstones.ts";
import type { AccessService } from "./access.ts";
import { decodeCursor, toPage } from "./paging.ts";

export type PrivacySettings = Schemas["PrivacySettings"];
export type ErasureCounts = Schemas["ErasureCounts"];
export type ErasureRecord = Schemas["ErasureRecord"];
type Client = Db | Tx;

/** At most this many visits, form submissions and deliveries per list of an export. */
export const EXPORT_LIMIT = 10_000;

/** One data subject, checked: a visitor id or a normalised e-mail address. */
type Subject = { type: "visitor"; visitorId: string } | { type: "person"; email: string };

function subjectOf(input: Schemas["DataSubject"]): Subject {
  if ((input.visitorId === undefined) === (input.subjectEmail === undefined)) {
    throw new Invalid("Name exactly one of visitorId and subjectEmail", [
      { location: "body", field: "visitorId", message: "exactly one of visitorId and subjectEmail is required" },
    ]);
  }
  return input.visitorId !== undefined ? { type: "visitor", visitorId: input.visitorId } : { type: "person", email: normaliseEmail(input.subjectEmail!) };
}

const jsonList = (values: readonly string[]) => Prisma.sql`(SELECT jsonb_array_elements_text(${JSON.stringify(values)}::jsonb))`;

/** A jsonb object of form fields with a value that is the address (trimmed, any case). */
const carries = (fields: Prisma.Sql, email: string) =>
  Prisma.sql`EXISTS (SELECT 1 FROM jsonb_each_text(${fields}) f WHERE lower(btrim(f.value)) = ${email})`;

/** Queued form events of the dataset that carry the subject's address (a person only). */
const queuedFormOf = (subject: Subject) =>
  subject.type === "person" ? Prisma.sql`(event->>'type' = 'form' AND ${carries(Prisma.sql`event->'fields'`, subject.email)})` : Prisma.sql`false`;

/**
 * The visitor ids of the subject in one dataset: the visitor id itself, or the visitors known by
 * the address and those whose queued form events carry it (they become known by it once written).
 */
async function visitorIdsOf(tx: Client, datasetId: string, subject: Subject): Promise<string[]> {
  if (subject.type === "visitor") return [subject.visitorId];
  const rows = await tx.$queryRaw<{ id: string }[]>`
    SELECT id FROM "Visitor" WHERE "datasetId" = ${datasetId} AND email = ${subject.email}
    UNION SELECT event->>'visitorId' FROM "IngestEvent" WHERE "datasetId" = ${datasetId} AND ${queuedFormOf(subject)}`;
  return rows.map((r) => r.id);
}

/** Deliveries of the account whose payload names one of the visitors or carries the address. */
const deliveriesOf = (accountId: string, datasetId: string, visitorIds: string[], subject: Subject) => {
  const data = Prisma.sql`(d.payload::jsonb -> 'data')`;
  const byEmail = subject.type === "person" ? Prisma.sql`OR lower(${data}->>'email') = ${subject.email}` : Prisma.empty;
  return Prisma.sql`d."accountId" = ${accountId} AND ${data}->>'datasetId' = ${datasetId}
    AND (${data}->>'visitorId' IN ${jsonList(visitorIds)} ${byEmail})`;
};

const formsOf = (datasetId: string, visitorIds: string[], subject: Subject) =>
  Prisma.sql`"datasetId" = ${datasetId} AND ("visitorId" IN ${jsonList(visitorIds)}
    ${subject.type === "person" ? Prisma.sql`OR ${carries(Prisma.sql`fields`, subject.email)}` : Prisma.empty})`;

const zero = (): ErasureCounts => ({ visitors: 0, visits: 0, formSubmissions: 0, queuedEvents: 0, webhookDeliveries: 0, leadsAdjusted: 0, leadsRemoved: 0 });

/** Visit counts lose the erased visits; visit times follow the visits left; a lead with none counted is removed. */
async function adjustLeads(tx: Tx, datasetId: string, erased: { leadId: string; n: bigint }[], counts: ErasureCounts): Promise<void> {
  if (!erased.length) return;
  const rows = JSON.stringify(erased.map((e) => ({ leadId: e.leadId, n: Number(e.n) })));
  counts.leadsAdjusted += await tx.$executeRaw`
    UPDATE "Lead" l SET "visitCount" = GREATEST(l."visitCount" - r.n, 0),
      "firstVisitAt" = COALESCE((SELECT min(v.at) FROM "Visit" v WHERE v."datasetId" = l."datasetId" AND v."leadId" = l.id), l."firstVisitAt"),
      "lastVisitAt" = COALESCE((SELECT max(v.at) FROM "Visit" v WHERE v."datasetId" = l."datasetId" AND v."leadId" = l.id), l."lastVisitAt")
    FROM jsonb_to_recordset(${rows}::jsonb) AS r("leadId" text, n int)
    WHERE l."datasetId" = ${datasetId} AND l.id = r."leadId"`;
  counts.leadsRemoved += await tx.$executeRaw`
    DELETE FROM "Lead" WHERE "datasetId" = ${datasetId} AND "visitCount" = 0
      AND id IN (SELECT "leadId" FROM jsonb_to_recordset(${rows}::jsonb) AS r("leadId" text, n int))`;
}

/**
 * Erases the subject within one dataset, adding to `counts`. The queue first (writers' batches in
 * hand committed before: the erasure holds the lock). A person's visitors get tombstones of their
 * own: their events still in the ingest log are not written either.
 */
async function eraseInDataset(tx: Tx, accountId: string, datasetId: string, subject: Subject, counts: ErasureCounts, erasedAt: Date): Promise<void> {
  const ids = await visitorIdsOf(tx, datasetId, subject);
  if (subject.type === "person") await recordTombstones(tx, { accountId, datasetId, erasedAt }, "visitor", ids);
  counts.queuedEvents += await tx.$executeRaw`
    DELETE FROM "IngestEvent" WHERE "datasetId" = ${datasetId} AND (event->>'visitorId' IN ${jsonList(ids)} OR ${queuedFormOf(subject)})`;
  const visits = await tx.$queryRaw<{ leadId: string; n: bigint }[]>`
    WITH gone AS (DELETE FROM "Visit" WHERE "datasetId" = ${datasetId} AND "visitorId" IN ${jsonList(ids)} RETURNING "leadId")
    SELECT "leadId", count(*) AS n FROM gone GROUP BY "leadId"`;
  counts.visits += visits.reduce((sum, v) => sum + Number(v.n), 0);
  counts.formSubmissions += await tx.$executeRaw`DELETE FROM "FormSubmission" WHERE ${formsOf(datasetId, ids, subject)}`;
  counts.visitors += await tx.$executeRaw`DELETE FROM "Visitor" WHERE "datasetId" = ${datasetId} AND id IN ${jsonList(ids)}`;
  counts.webhookDeliveries += await tx.$executeRaw`DELETE FROM "WebhookDelivery" d WHERE ${deliveriesOf(accountId, datasetId, ids, subject)}`;
  await adjustLeads(tx, datasetId, visits, counts);
}

function recordDto(row: { id: string; datasetId: string | null; subjectType: string; actorUserId: bigint; requestedAt: Date; counts: unknown }): ErasureRecord {
  return {
    erasureId: row.id,
    datasetId: row.datasetId,
    subjectType: row.subjectType as ErasureRecord["subjectType"],
    actorUserId: Number(row.actorUserId),
    erasedAt: row.requestedAt.toISOString(),
    counts: row.counts as ErasureCounts,
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

export function privacyService(db: Db, { access, now }: { access: AccessService; now: () => Date }) {
  /** The datasets an operation reaches: the one named (404 when not the account's), else all of the account's. */
  async function scope(accountId: string, datasetId: string | undefined): Promise<string[]> {
    if (datasetId !== undefined) return [(await access.dataset(accountId, datasetId)).id];
    const all = await db.dataset.findMany({ where: { accountId }, select: { id: true }, orderBy: { id: "asc" } });
    return all.map((d) => d.id);
  }

  async function exportInDataset(accountId: string, datasetId: string, subject: Subject) {
    const ids = await visitorIdsOf(db, datasetId, subject);
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

  return {
    async settings(accountId: string, actorEmail: string, datasetId: string): Promise<PrivacySettings> {
      await access.admin(accountId, actorEmail);
      const dataset = await access.dataset(accountId, datasetId);
      return settingsDto(dataset);
    },

    async updateSettings(accountId: string, actorEmail: string, datasetId: string, change: Schemas["PrivacySettingsUpdate"]): Promise<PrivacySettings> {
      await access.admin(accountId, actorEmail);
      await access.dataset(accountId, datasetId);
      const updated = await db.dataset.update({ where: { id: datasetId, accountId }, data: change, select: settingsSelect });
      return settingsDto(updated);
    },

    /** Erases the subject in every dataset of the scope, in one transaction; the receipt (also the audit record). */
    async erase(accountId: string, actorEmail: string, input: Schemas["DataSubject"]): Promise<ErasureRecord> {
      const actor = await access.admin(accountId, actorEmail);
      const subject = subjectOf(input);
      const datasets = await scope(accountId, input.datasetId);
      const record = await db.$transaction(
        async (tx) => {
          await holdForErasure(tx);
          const erasedAt = now();
          const counts = zero();
          for (const datasetId of datasets) await eraseInDataset(tx, accountId, datasetId, subject, counts, erasedAt);
          // what is still in the ingest log (JetStream) is dropped by the writer (tracking/erasure-tombstones.ts)
          const tombstone = subject.type === "visitor" ? (["visitor", subject.visitorId] as const) : (["email", subject.email] as const);
          await recordTombstones(tx, { accountId, datasetId: input.datasetId ?? null, erasedAt }, tombstone[0], [tombstone[1]]);
          return tx.privacyErasure.create({
            data: { id: newId("era"), accountId, datasetId: input.datasetId ?? null, subjectType: subject.type, actorUserId: actor.userId, requestedAt: erasedAt, counts: { ...counts } },
          });
        },
        { timeout: 60_000 },
      );
      return recordDto(record);
    },

    /** Everything the erasure of the same subject would erase, as JSON. */
    async exportSubject(accountId: string, actorEmail: string, input: Schemas["DataSubject"]): Promise<Schemas["DataSubjectExport"]> {
      await access.admin(accountId, actorEmail);
      const subject = subjectOf(input);
      const parts = [];
      for (const datasetId of await scope(accountId, input.datasetId)) parts.push(await exportInDataset(accountId, datasetId, subject));
      const visitors = parts.flatMap((p) => p.visitors);
      const enriched = [...new Set(visitors.filter((v) => v.enrichment === "enriched" && v.email).map((v) => v.email!))];
      const contacts = enriched.length ? await db.contact.findMany({ where: { email: { in: enriched } }, orderBy: { email: "asc" } }) : [];
      return {
        exportedAt: now().toISOString(),
        visitors,
        otherFormSubmissions: parts.flatMap((p) => p.others),
        contacts: contacts.map(toProfile),
        webhookDeliveries: parts.flatMap((p) => p.deliveries).map((d) => ({ deliveryId: d.id, eventType: d.eventType, createdAt: d.createdAt.toISOString(), payload: d.payload })),
      };
    },

    /** The account's erasure records, newest first. */
    async erasures(accountId: string, query: QueryOf<"listErasures">): Promise<Schemas["ErasurePage"]> {
      await access.admin(accountId, query.email);
      const after = decodeCursor(query.cursor, readPosition);
      const rows = await db.privacyErasure.findMany({
        where: {
          accountId,
          ...(after && { OR: [{ requestedAt: { lt: new Date(after.t) } }, { requestedAt: new Date(after.t), id: { lt: after.id } }] }),
        },
        orderBy: [{ requestedAt: "desc" }, { id: "desc" }],
        take: query.limit + 1,
      });
      return toPage(rows.map(recordDto), query.limit, (last) => ({ t: last.erasedAt, id: last.erasureId }));
    },
  };
}

type FormRow = { at: Date; url: string; partial: boolean; fields: unknown };
const formDto = (f: FormRow) => ({ at: f.at.toISOString(), url: f.url, partial: f.partial, fields: f.fields as Record<string, string> });

export type PrivacyService = ReturnType<typeof privacyService>;
