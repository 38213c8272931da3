// The writer's batch transaction (writeEvents): what one batch of accepted events writes, in the
// transaction of the log that took them (log/queue-table.ts, log/jetstream-log.ts): events an
// erasure reached are dropped, shared networks' events attributed or kept pending, then leads,
// visitors, visits, forms and pages written, visited leads updated last, and the hook called.
// Contact enrichment, domain evidence and identity learning follow each batch, after its commit
// (log/writer.ts).
import { Prisma } from "../../../generated/prisma/client.ts";
import { EMPTY_RESULT, type IngestResult, type LeadRef, type Tx, type WriterHooks } from "./write-result.ts";
import { withoutErased } from "./erasure-tombstones.ts";
import { emailOf, type NetworkOfEvent, type QueuedEvent, type QueueRow } from "../collect/events.ts";
import { attributePending, joinLeadsOfEvidence, pendingNotes, storePending } from "./pending.ts";

/** The path a page counts as: lower case, without query, fragment or trailing slash ("/" for the root). */
export function pagePath(url: string): string {
  let path: string;
  try {
    path = new URL(url, "http://page.invalid/").pathname;
  } catch {
    path = "/";
  }
  return (path.toLowerCase().replace(/\/+$/, "") || "/").slice(0, 512);
}

const key = (...parts: (string | null)[]) => parts.join("\u0000");

interface LeadRow {
  accountId: string;
  datasetId: string;
  id: string;
  organizationName: string;
  organizationDomain: string | null;
  /** `curated` with a domain of the lead's own network or a declared one; an identity's evidence: its kind (domain-evidence.ts adds the others). */
  domainSource: "declared" | "curated" | "email" | "reverse_dns" | null;
  country: string | null;
  city: string | null;
  firstVisitAt: string;
  lastVisitAt: string;
  visitCount: number;
  identitySource: NonNullable<NetworkOfEvent["identitySource"]>;
  identityConfidence: number;
}

interface VisitorRow {
  accountId: string;
  datasetId: string;
  id: string;
  leadId: string;
  email: string | null;
  enrichment: "pending" | null;
  firstSeenAt: string;
  lastSeenAt: string;
}

/**
 * A map's rows in the order of their keys: concurrent batches (several writers, or several
 * transactions of one) lock the rows of an upsert in the same order and never deadlock.
 */
const inKeyOrder = <T>(rows: Map<string, T>): T[] => [...rows.keys()].sort().map((k) => rows.get(k)!);

/** The lead's domainSource for a domain of its identity: a declaration's is declared (never curated: issue 39), its own network's curated, evidence's its kind. */
const DOMAIN_SOURCE = { network: "curated", declared: "declared", form_email: "email", reverse_dns: "reverse_dns" } as const;

/** Leads and visitors aggregated over the batch: an upsert may touch each row only once. */
function aggregate(events: readonly QueueRow[]): { leads: LeadRow[]; visitors: VisitorRow[] } {
  const leads = new Map<string, LeadRow>();
  const visitors = new Map<string, VisitorRow>();
  for (const { accountId, datasetId, event } of events) {
    const { network, at } = event;
    if (event.type === "pageview") {
      const lead = leads.get(key(datasetId, network.leadId));
      if (lead) {
        lead.visitCount += 1;
        lead.lastVisitAt = at > lead.lastVisitAt ? at : lead.lastVisitAt;
        lead.firstVisitAt = at < lead.firstVisitAt ? at : lead.firstVisitAt;
        lead.country = network.country ?? lead.country;
        lead.city = network.city ?? lead.city;
        if ((network.identityConfidence ?? 1) > lead.identityConfidence) {
          lead.identitySource = network.identitySource ?? "network";
          lead.identityConfidence = network.identityConfidence ?? 1;
        }
      } else {
        leads.set(key(datasetId, network.leadId), {
          accountId,
          datasetId,
          id: network.leadId,
          organizationName: network.organizationName,
          organizationDomain: network.organizationDomain,
          domainSource: network.organizationDomain ? DOMAIN_SOURCE[network.identitySource ?? "network"] : null,
          country: network.country,
          city: network.city,
          firstVisitAt: at,
          lastVisitAt: at,
          visitCount: 1,
          identitySource: network.identitySource ?? "network",
          identityConfidence: network.identityConfidence ?? 1,
        });
      }
    }
    // identity comes from submitted forms only: a partial (unsent) form is kept, but its address is not the visitor's
    const email = event.type === "form" && !event.partial ? (emailOf(event.fields) ?? null) : null;
    const visitor = visitors.get(key(datasetId, event.visitorId));
    if (visitor) {
      visitor.lastSeenAt = at > visitor.lastSeenAt ? at : visitor.lastSeenAt;
      visitor.leadId = network.leadId;
      visitor.email = email ?? visitor.email;
      visitor.enrichment = email && event.enrich ? "pending" : visitor.enrichment;
    } else {
      visitors.set(key(datasetId, event.visitorId), {
        accountId,
        datasetId,
        id: event.visitorId,
        leadId: network.leadId,
        email,
        enrichment: email && event.enrich ? "pending" : null,
        firstSeenAt: at,
        lastSeenAt: at,
      });
    }
  }
  return { leads: inKeyOrder(leads), visitors: inKeyOrder(visitors) };
}

const json = (value: unknown) => JSON.stringify(value);

const LEAD_COLUMNS = Prisma.sql`r("accountId" text, "datasetId" text, "id" text, "organizationName" text, "organizationDomain" text,
  "domainSource" text, "country" text, "city" text, "firstVisitAt" timestamptz, "lastVisitAt" timestamptz, "visitCount" int,
  "identitySource" text, "identityConfidence" float8)`;

/**
 * The batch's new leads, inserted with the batch's counts (the visits' foreign key needs them
 * first); an existing lead is left alone here and updated last (updateVisitedLeads). Keys of the
 * leads created.
 */
async function insertNewLeads(tx: Tx, leads: LeadRow[]): Promise<Set<string>> {
  if (!leads.length) return new Set();
  const created = await tx.$queryRaw<{ datasetId: string; id: string }[]>`
    INSERT INTO "Lead" ("accountId", "datasetId", "id", "organizationName", "organizationDomain", "domainSource", "country", "city",
                        "firstVisitAt", "lastVisitAt", "visitCount", "identitySource", "identityConfidence")
    SELECT r."accountId", r."datasetId", r."id", r."organizationName", r."organizationDomain", r."domainSource"::"DomainSource",
           r."country", r."city", r."firstVisitAt", r."lastVisitAt", r."visitCount", r."identitySource"::"IdentitySource", r."identityConfidence"
    FROM jsonb_to_recordset(${json(leads)}::jsonb) AS ${LEAD_COLUMNS}
    ON CONFLICT ("datasetId", "id") DO NOTHING
    RETURNING "datasetId", "id"`;
  return new Set(created.map((r) => key(r.datasetId, r.id)));
}

/**
 * The leads the batch visited that existed: visit counts add up; first and last visit widen; place
 * follows the latest data. A curated domain replaces whatever domain the lead had (it is the
 * strongest evidence); an identity's domain from evidence only fills in a missing one. The
 * identity source and confidence are raised when the batch's are stronger. The batch's last statement: the rows
 * stay locked until its commit only, so that concurrent batches visiting the same organisation
 * (every batch, under load) wait for each other briefly; locked in key order, they never deadlock.
 */
async function updateVisitedLeads(tx: Tx, leads: LeadRow[]): Promise<void> {
  if (!leads.length) return;
  const rows = json(leads);
  await tx.$executeRaw`
    SELECT 1 FROM "Lead" l JOIN jsonb_to_recordset(${rows}::jsonb) AS ${LEAD_COLUMNS} ON l."datasetId" = r."datasetId" AND l.id = r.id
    ORDER BY l."datasetId", l.id FOR NO KEY UPDATE OF l`;
  await tx.$executeRaw`
    UPDATE "Lead" l SET
      "visitCount" = l."visitCount" + r."visitCount",
      "firstVisitAt" = LEAST(l."firstVisitAt", r."firstVisitAt"),
      "lastVisitAt" = GREATEST(l."lastVisitAt", r."lastVisitAt"),
      "organizationDomain" = CASE WHEN r."domainSource" IN ('declared', 'curated') OR l."organizationDomain" IS NULL THEN COALESCE(r."organizationDomain", l."organizationDomain") ELSE l."organizationDomain" END,
      "domainSource" = CASE WHEN r."organizationDomain" IS NOT NULL AND (r."domainSource" IN ('declared', 'curated') OR l."organizationDomain" IS NULL)
                            THEN r."domainSource"::"DomainSource" ELSE l."domainSource" END,
      "identitySource" = CASE WHEN r."identityConfidence" > l."identityConfidence" THEN r."identitySource"::"IdentitySource" ELSE l."identitySource" END,
      "identityConfidence" = GREATEST(l."identityConfidence", r."identityConfidence"),
      "country" = COALESCE(r."country", l."country"),
      "city" = COALESCE(r."city", l."city")
    FROM jsonb_to_recordset(${rows}::jsonb) AS ${LEAD_COLUMNS}
    WHERE l."datasetId" = r."datasetId" AND l.id = r.id`;
}

/** A new e-mail address of a visitor starts its enrichment again; the same address does not. */
async function upsertVisitors(tx: Tx, visitors: VisitorRow[]): Promise<void> {
  await tx.$executeRaw`
    INSERT INTO "Visitor" ("accountId", "datasetId", "id", "leadId", "email", "enrichment", "firstSeenAt", "lastSeenAt")
    SELECT r."accountId", r."datasetId", r."id", r."leadId", r."email", r."enrichment"::"EnrichmentState", r."firstSeenAt", r."lastSeenAt"
    FROM jsonb_to_recordset(${json(visitors)}::jsonb) AS r("accountId" text, "datasetId" text, "id" text, "leadId" text,
      "email" text, "enrichment" text, "firstSeenAt" timestamptz, "lastSeenAt" timestamptz)
    ON CONFLICT ("datasetId", "id") DO UPDATE SET
      "leadId" = EXCLUDED."leadId",
      "lastSeenAt" = GREATEST("Visitor"."lastSeenAt", EXCLUDED."lastSeenAt"),
      "email" = COALESCE(EXCLUDED."email", "Visitor"."email"),
      "enrichment" = CASE WHEN EXCLUDED."email" IS NOT NULL AND EXCLUDED."email" IS DISTINCT FROM "Visitor"."email"
                          THEN EXCLUDED."enrichment" ELSE "Visitor"."enrichment" END`;
}

async function insertVisits(tx: Tx, events: readonly QueueRow[]): Promise<number> {
  const rows = events
    .filter((r) => r.event.type === "pageview")
    .map(({ accountId, datasetId, event }) => {
      const e = event as Extract<QueuedEvent, { type: "pageview" }>;
      return {
        accountId,
        datasetId,
        leadId: e.network.leadId,
        visitorId: e.visitorId,
        at: e.at,
        url: e.url,
        referrer: e.referrer || null,
        title: e.title || null,
        utmSource: e.utm?.source ?? null,
        utmMedium: e.utm?.medium ?? null,
        utmCampaign: e.utm?.campaign ?? null,
        utmTerm: e.utm?.term ?? null,
        utmContent: e.utm?.content ?? null,
        ip: e.network.ip,
        asn: e.network.asn,
        networkType: e.network.networkType,
        country: e.network.country,
        city: e.network.city,
      };
    });
  if (!rows.length) return 0;
  return tx.$executeRaw`
    INSERT INTO "Visit" ("accountId", "datasetId", "leadId", "visitorId", "at", "url", "referrer", "title", "utmSource", "utmMedium",
                         "utmCampaign", "utmTerm", "utmContent", "ip", "asn", "networkType", "country", "city")
    SELECT * FROM jsonb_to_recordset(${json(rows)}::jsonb) AS r("accountId" text, "datasetId" text, "leadId" text, "visitorId" text,
      "at" timestamptz, "url" text, "referrer" text, "title" text, "utmSource" text, "utmMedium" text, "utmCampaign" text,
      "utmTerm" text, "utmContent" text, "ip" text, "asn" int, "networkType" text, "country" text, "city" text)`;
}

async function insertForms(tx: Tx, events: readonly QueueRow[]): Promise<number> {
  const rows = events
    .filter((r) => r.event.type === "form")
    .map(({ accountId, datasetId, event }) => {
      const e = event as Extract<QueuedEvent, { type: "form" }>;
      return { accountId, datasetId, visitorId: e.visitorId, leadId: e.network.leadId, at: e.at, url: e.url, partial: e.partial ?? false, fields: e.fields };
    });
  if (!rows.length) return 0;
  return tx.$executeRaw`
    INSERT INTO "FormSubmission" ("accountId", "datasetId", "visitorId", "leadId", "at", "url", "partial", "fields")
    SELECT * FROM jsonb_to_recordset(${json(rows)}::jsonb) AS r("accountId" text, "datasetId" text, "visitorId" text,
      "leadId" text, "at" timestamptz, "url" text, "partial" boolean, "fields" jsonb)`;
}

/** The distinct pages of each lead (the lead score's depth); a page already known adds nothing. */
async function insertPages(tx: Tx, events: readonly QueueRow[]): Promise<void> {
  const pages = new Map<string, { datasetId: string; leadId: string; path: string }>();
  for (const { datasetId, event } of events) {
    if (event.type !== "pageview") continue;
    const path = pagePath(event.url);
    pages.set(key(datasetId, event.network.leadId, path), { datasetId, leadId: event.network.leadId, path });
  }
  if (!pages.size) return;
  await tx.$executeRaw`
    INSERT INTO "LeadPage" ("datasetId", "leadId", "path")
    SELECT * FROM jsonb_to_recordset(${json(inKeyOrder(pages))}::jsonb) AS r("datasetId" text, "leadId" text, "path" text)
    ON CONFLICT DO NOTHING`;
}

/** The latest address of each lead in the batch. */
function addressesOf(events: readonly QueueRow[]): IngestResult["addresses"] {
  const latest = new Map<string, IngestResult["addresses"][number]>();
  for (const { accountId, datasetId, event } of events) {
    if (event.type === "pageview") latest.set(key(datasetId, event.network.leadId), { accountId, datasetId, leadId: event.network.leadId, ip: event.network.ip });
  }
  return [...latest.values()];
}

/** Writes claimed events in the caller's transaction: leads, visitors, visits, forms, pages, then the hook. */
export async function writeEvents(tx: Tx, claimed: readonly QueueRow[], hooks: WriterHooks = {}): Promise<IngestResult> {
  // what an erasure reached while it waited in the log is not written (erasure-tombstones.ts)
  const written = await withoutErased(tx, claimed);
  if (!written.length) return EMPTY_RESULT;
  // events of shared networks: their organisation's visits when the address has an identity, else kept pending
  const { attributed, pending } = await attributePending(tx, written, hooks.identify);
  // one lead per organisation: its own network joins the lead evidence named it by first
  const events = await joinLeadsOfEvidence(tx, attributed);
  const pendingEvents = await storePending(tx, pending);
  const notes = pendingNotes(written.filter((r) => r.event.network.pending));
  if (!events.length) return { ...EMPTY_RESULT, events: pendingEvents, pending: notes, pendingEvents };
  const { leads, visitors } = aggregate(events);
  const created = await insertNewLeads(tx, leads);
  await upsertVisitors(tx, visitors);
  const visits = await insertVisits(tx, events);
  const forms = await insertForms(tx, events);
  await insertPages(tx, events);
  const isNew = (lead: LeadRow) => created.has(key(lead.datasetId, lead.id));
  const visited = leads.filter((lead) => !isNew(lead));
  await updateVisitedLeads(tx, visited);
  const ref = (r: LeadRow): LeadRef => ({ accountId: r.accountId, datasetId: r.datasetId, leadId: r.id });
  const result: IngestResult = {
    events: events.length + pendingEvents,
    visits,
    forms,
    leadsCreated: leads.filter(isNew).map(ref),
    leadsVisited: visited.map(ref),
    visitorsIdentified: visitors
      .filter((v) => v.email)
      .map((v) => ({ accountId: v.accountId, datasetId: v.datasetId, leadId: v.leadId, visitorId: v.id })),
    addresses: addressesOf(events),
    pending: notes,
    pendingEvents,
  };
  await hooks.onIngested?.(result, tx);
  return result;
}
