// The writer's batch transaction (writeEvents): what one batch of accepted events writes, in the
// transaction of the log that took them (log/queue-table.ts, log/jetstream-log.ts): events an
// erasure reached are dropped, shared networks' events attributed or kept pending, then leads,
// visitors, visits, forms and pages written, visited leads updated last, and the hook called.
// The statements on leads, visitors, visits and forms are their stores' (lead-store.ts,
// visitor-store.ts, visit-store.ts); this module decides what and in which order.
// Contact enrichment, domain evidence and identity learning follow each batch, after its commit
// (log/writer.ts).
import { EMPTY_RESULT, type IngestResult, type LeadRef, type Tx, type WriterHooks } from "./write-result.ts";
import { withoutErased } from "./erasure-tombstones.ts";
import { emailOf, type QueueRow } from "../collect/events.ts";
import { attributePending, joinLeadsOfEvidence, pendingNotes, storePending } from "./pending.ts";
import { insertNewLeads, type LeadRow, updateVisitedLeads } from "./lead-store.ts";
import { upsertVisitors, type VisitorRow } from "./visitor-store.ts";
import { insertForms, insertVisits } from "./visit-store.ts";

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
  const created = new Set((await insertNewLeads(tx, leads)).map((r) => key(r.datasetId, r.id)));
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
