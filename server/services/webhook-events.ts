// Webhook events and their outbox. publishEvent writes, inside the caller's transaction, one
// delivery row per enabled endpoint of the account subscribed to the event's type and one
// `webhook` job per delivery: the event exists if and only if the caller's write commits.
// The hooks below turn what tracking wrote into events; server/main.ts composes them.
// lead.created is a lead's first event: a lead an exclusion rule hid when it was first seen owes
// it (Lead.createdEventPending), and it is published just before the first event of that lead
// published once no rule hides it.
import { type Lead as PrismaLead, Prisma } from "../../generated/prisma/client.ts";
import type { Db } from "../db/database.ts";
import type { EnrichmentOutcome } from "../tracking/write/enrichment.ts";
import type { IngestResult, Tx } from "../tracking/write/write-result.ts";
import type { JobQueue } from "../jobs/queue.ts";
import { notExcluded } from "../domain/exclusions.ts";
import { oweCreatedEventOfHidden, type RemovalReason, type RemovedLead, settleOwedCreatedEvents } from "../tracking/write/lead-store.ts";
import { insertDelivery } from "../notify/webhook-store.ts";

/** The spec's WebhookEventType, in its order (a test ties them). */
export const EVENT_TYPES = ["lead.created", "lead.visited", "lead.removed", "segment.lead_entered", "contact.enriched"] as const;
export type EventType = (typeof EVENT_TYPES)[number];
/** Sent only on request (POST .../test), whatever the endpoint subscribes to. */
export const TEST_EVENT = "webhook.test";
/** The largest body a delivery may carry. */
export const MAX_PAYLOAD_BYTES = 20 * 1024;

export interface WebhookEvent {
  accountId: string;
  type: EventType;
  data: Record<string, unknown>;
}

/** A lead entering a segment (server/services/segment-entries.ts, whose listener onSegmentEntered is). */
export interface SegmentEntry {
  accountId: string;
  datasetId: string;
  segmentId: number;
  leadId: string;
  enteredAt?: Date;
}

type Client = Tx | Prisma.TransactionClient;

/** The body sent: `{type, timestamp, data}` as JSON, refused above 20 KB. */
export function payloadOf(type: string, at: Date, data: Record<string, unknown>): string {
  const body = JSON.stringify({ type, timestamp: at.toISOString(), data });
  if (Buffer.byteLength(body) > MAX_PAYLOAD_BYTES) throw new Error(`webhook payload of ${type} exceeds ${MAX_PAYLOAD_BYTES} bytes`);
  return body;
}

/** The lead columns an event carries. */
type Lead = Pick<
  PrismaLead,
  | "accountId" | "datasetId" | "id" | "organizationName" | "organizationDomain" | "industry"
  | "employeeCount" | "country" | "city" | "firstVisitAt" | "lastVisitAt" | "visitCount"
  | "identitySource" | "identityConfidence"
>;

function leadData(lead: Lead): Record<string, unknown> {
  return {
    accountId: lead.accountId,
    datasetId: lead.datasetId,
    leadId: lead.id,
    lead: {
      organizationName: lead.organizationName.slice(0, 500),
      organizationDomain: lead.organizationDomain,
      industry: lead.industry,
      employeeCount: lead.employeeCount,
      country: lead.country,
      city: lead.city,
      firstVisitAt: lead.firstVisitAt.toISOString(),
      lastVisitAt: lead.lastVisitAt.toISOString(),
      visitCount: lead.visitCount,
      identitySource: lead.identitySource,
      identityConfidence: lead.identityConfidence,
    },
  };
}

/**
 * The stored leads among these, and the keys of those an exclusion rule of their dataset hides:
 * a hidden lead publishes no event, as it shows in no listing (rules read in the publishing
 * transaction).
 */
async function leadsOf(tx: Client, refs: { datasetId: string; leadId: string }[]): Promise<{ leads: Map<string, PrismaLead>; hidden: Set<string> }> {
  if (!refs.length) return { leads: new Map(), hidden: new Set() };
  const keys = Prisma.join(refs.map((r) => Prisma.sql`(${r.datasetId}, ${r.leadId})`));
  const rows = await tx.$queryRaw<{ datasetId: string; id: string; visible: boolean }[]>(
    Prisma.sql`SELECT l."datasetId", l."id", (${notExcluded}) AS "visible" FROM "Lead" l WHERE (l."datasetId", l."id") IN (${keys})`,
  );
  const hidden = new Set(rows.filter((r) => !r.visible).map((r) => leadKey(r.datasetId, r.id)));
  const visible = rows.filter((r) => r.visible);
  const leads = visible.length ? await tx.lead.findMany({ where: { OR: visible.map((v) => ({ datasetId: v.datasetId, id: v.id })) } }) : [];
  return { leads: new Map(leads.map((l) => [leadKey(l.datasetId, l.id), l])), hidden };
}

const leadKey = (datasetId: string, leadId: string) => `${datasetId}/${leadId}`;

/** The event side of webhooks around one job queue: publishEvent and the hooks that call it. */
export interface WebhookEventDeps {
  db: Db;
  jobs: Pick<JobQueue, "enqueue" | "wake">;
  now: () => Date;
}

/** The enabled endpoints of these accounts, by account, with their event types. */
async function endpointsOf(tx: Client, accountIds: string[]) {
  if (!accountIds.length) return new Map<string, { id: string; eventTypes: string[] }[]>();
  const rows = await tx.webhookEndpoint.findMany({
    where: { accountId: { in: [...new Set(accountIds)] }, enabled: true },
    select: { id: true, accountId: true, eventTypes: true },
    orderBy: { id: "asc" },
  });
  const byAccount = new Map<string, { id: string; eventTypes: string[] }[]>();
  for (const row of rows) byAccount.set(row.accountId, [...(byAccount.get(row.accountId) ?? []), row]);
  return byAccount;
}

async function fanOut({ jobs }: Pick<WebhookEventDeps, "jobs">, tx: Client, endpoints: { id: string; eventTypes: string[] }[], event: WebhookEvent, at: Date): Promise<number> {
  const subscribed = endpoints.filter((e) => e.eventTypes.includes(event.type));
  if (!subscribed.length) return 0;
  const payload = payloadOf(event.type, at, event.data);
  for (const endpoint of subscribed) {
    await insertDelivery(tx, jobs, { accountId: event.accountId, endpointId: endpoint.id, type: event.type, payload, at });
  }
  return subscribed.length;
}

type Endpoints = Awaited<ReturnType<typeof endpointsOf>>;

/**
 * The lead.created owed for these leads (an exclusion rule hid them when first seen and hides them
 * no longer), published before the events of them that the caller publishes next. Only where the
 * account has endpoints: without one, the debt waits for the first event that is published.
 */
async function publishOwedCreatedEvents(deps: WebhookEventDeps, tx: Client, endpoints: Endpoints, refs: readonly { accountId: string; datasetId: string; leadId: string }[], at: Date): Promise<void> {
  const owed = await settleOwedCreatedEvents(tx, refs.filter((r) => endpoints.has(r.accountId)));
  if (!owed.length) return;
  const { leads } = await leadsOf(tx, owed);
  for (const ref of owed) {
    const lead = leads.get(leadKey(ref.datasetId, ref.leadId));
    if (lead) await fanOut(deps, tx, endpoints.get(lead.accountId)!, { accountId: lead.accountId, type: "lead.created", data: leadData(lead) }, at);
  }
}

/** Fans the event out to the account's enabled endpoints subscribed to its type, in `tx`; how many deliveries. */
export async function publishEvent(deps: WebhookEventDeps, tx: Client, event: WebhookEvent): Promise<number> {
  const endpoints = (await endpointsOf(tx, [event.accountId])).get(event.accountId) ?? [];
  return fanOut(deps, tx, endpoints, event, deps.now());
}

/**
 * lead.created and lead.visited of one ingest batch, inside the batch's transaction: a visited
 * lead whose lead.created is owed gets it first.
 */
export async function onIngested(deps: WebhookEventDeps, result: IngestResult, tx: Tx): Promise<void> {
  await oweCreatedEventOfHidden(tx, result.leadsCreated);
  const refs = [
    ...result.leadsCreated.map((r) => ({ ...r, type: "lead.created" as const })),
    ...result.leadsVisited.map((r) => ({ ...r, type: "lead.visited" as const })),
  ];
  if (!refs.length) return;
  const endpoints = await endpointsOf(tx, refs.map((r) => r.accountId));
  const at = deps.now();
  await publishOwedCreatedEvents(deps, tx, endpoints, result.leadsVisited, at);
  const wanted = refs.filter((r) => endpoints.get(r.accountId)?.some((e) => e.eventTypes.includes(r.type)));
  if (!wanted.length) return;
  const { leads } = await leadsOf(tx, wanted);
  for (const ref of wanted) {
    const lead = leads.get(leadKey(ref.datasetId, ref.leadId));
    if (!lead) continue;
    await fanOut(deps, tx, endpoints.get(ref.accountId)!, { accountId: ref.accountId, type: ref.type, data: leadData(lead) }, at);
  }
}

/**
 * contact.enriched for each visitor the writer enriched. The writer calls this after the
 * enrichment committed, so these are written in a transaction of their own.
 */
export async function onEnriched(deps: WebhookEventDeps, outcomes: EnrichmentOutcome[]): Promise<void> {
  const enriched = outcomes.filter((o) => o.state === "enriched");
  if (!enriched.length) return;
  await deps.db.$transaction(async (tx) => {
    const endpoints = await endpointsOf(tx, enriched.map((o) => o.accountId));
    const at = deps.now();
    const ofLeads = (list: EnrichmentOutcome[]) => list.flatMap((o) => (o.leadId ? [{ accountId: o.accountId, datasetId: o.datasetId, leadId: o.leadId }] : []));
    const subscribed = enriched.filter((o) => endpoints.get(o.accountId)?.some((e) => e.eventTypes.includes("contact.enriched")));
    await publishOwedCreatedEvents(deps, tx, endpoints, ofLeads(subscribed), at);
    const { hidden } = await leadsOf(tx, ofLeads(subscribed));
    const wanted = subscribed.filter((o) => !o.leadId || !hidden.has(leadKey(o.datasetId, o.leadId)));
    if (!wanted.length) return;
    const visitors = await tx.visitor.findMany({
      where: { OR: wanted.map((o) => ({ datasetId: o.datasetId, id: o.visitorId })) },
      select: { datasetId: true, id: true, email: true },
    });
    const emails = visitors.map((v) => v.email).filter((e): e is string => !!e);
    const contacts = emails.length ? await tx.contact.findMany({ where: { email: { in: emails } } }) : [];
    const contactOf = new Map(contacts.map((c) => [c.email, c]));
    const visitorOf = new Map(visitors.map((v) => [`${v.datasetId}/${v.id}`, v]));
    for (const o of wanted) {
      const email = visitorOf.get(`${o.datasetId}/${o.visitorId}`)?.email ?? null;
      const contact = email ? contactOf.get(email) : undefined;
      const data = {
        accountId: o.accountId,
        datasetId: o.datasetId,
        leadId: o.leadId,
        visitorId: o.visitorId,
        email,
        contact: contact
          ? { fullName: contact.fullName, headline: contact.headline, linkedinUrl: contact.linkedinUrl, seniority: contact.seniority, jobFunction: contact.jobFunction, location: contact.location }
          : null,
      };
      await fanOut(deps, tx, endpoints.get(o.accountId)!, { accountId: o.accountId, type: "contact.enriched", data }, at);
    }
  });
  deps.jobs.wake();
}

/**
 * segment.lead_entered for each entry, inside the transaction that recorded the entries; a lead
 * whose lead.created is owed gets it first.
 */
export async function onSegmentEntered(deps: WebhookEventDeps, entries: readonly SegmentEntry[], tx: Client): Promise<void> {
  if (!entries.length) return;
  const endpoints = await endpointsOf(tx, entries.map((e) => e.accountId));
  const at = deps.now();
  await publishOwedCreatedEvents(deps, tx, endpoints, entries, at);
  const wanted = entries.filter((e) => endpoints.get(e.accountId)?.some((x) => x.eventTypes.includes("segment.lead_entered")));
  if (!wanted.length) return;
  const { leads, hidden } = await leadsOf(tx, wanted);
  for (const entry of wanted) {
    const key = leadKey(entry.datasetId, entry.leadId);
    if (hidden.has(key)) continue;
    const lead = leads.get(key);
    const data = { ...(lead ? leadData(lead) : { accountId: entry.accountId, datasetId: entry.datasetId, leadId: entry.leadId }), segmentId: entry.segmentId };
    await fanOut(deps, tx, endpoints.get(entry.accountId)!, { accountId: entry.accountId, type: "segment.lead_entered", data }, entry.enteredAt ?? at);
  }
}

/**
 * lead.removed for each removed lead the partner knew (shown, its lead.created published), in
 * the removing transaction: `data` is the lead as it was, with `reason`. A lead that returns
 * later is new: its next visit publishes lead.created again (one per life of the lead).
 */
export async function onLeadsRemoved(deps: WebhookEventDeps, tx: Client, removed: readonly RemovedLead[], reason: RemovalReason): Promise<void> {
  const known = removed.filter((lead) => lead.known);
  if (!known.length) return;
  const endpoints = await endpointsOf(tx, known.map((lead) => lead.accountId));
  const at = deps.now();
  for (const { leadId, known: _, ...lead } of known) {
    const data = { ...leadData({ ...lead, id: leadId } as Lead), reason };
    await fanOut(deps, tx, endpoints.get(lead.accountId) ?? [], { accountId: lead.accountId, type: "lead.removed", data }, at);
  }
}
