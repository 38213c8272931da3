// Pending events: page views and forms from isp, hosting, mobile and unknown networks (the
// collector keeps them, the address masked when the dataset asks), unlisted until their address
// has an identity (server/identity/identities.ts). The only code that writes "PendingEvent".
// - The writer, per batch (batch.ts writeEvents): `attributePending` gives the pending events of
//   identified addresses their organisation's lead; `storePending` keeps the others.
// - After each batch commits (writer.ts, off the write path): `learn` records the forms' business
//   e-mail domains and the addresses' PTR names as evidence, then backfills the ranges they touch:
//   the pending events of addresses that now have an identity are written as visits of their lead
//   (in a transaction of their own, through writeEvents) and leave this table.
// - Declaring a network backfills the account's pending events inside it (`backfillNetwork`).
// - Retention deletes what waited longer than TRACKING_PENDING_DAYS (`purgePending`); erasure and
//   export find a subject's rows by visitor id, or by the e-mail address in a form's fields.
import { Prisma } from "../../../generated/prisma/client.ts";
import type { Db } from "../../db/database.ts";
import type { Logger } from "../../logging.ts";
import type { IngestResult, PendingNote, Tx, WriterHooks } from "./write-result.ts";
import { visitorHourOf } from "../../identity/activity.ts";
import { addressKeys, rangesOf } from "../../identity/addresses.ts";
import { POOL, type IdentityStore } from "../../identity/identities.ts";
import type { AddressQuery, Identity } from "../../identity/types.ts";
import { holdForWriting } from "./erasure-tombstones.ts";
import { carries, jsonList, type Subject } from "./erasure.ts";
import { emailOf, leadIdOf, type NetworkOfEvent, type QueueRow } from "../collect/events.ts";
import { type OnLeadsRemoved, type RemovedLead, subtractVisits } from "./lead-store.ts";
import { knownOrganizationOfDomain } from "../../identity/organizations.ts";
import { takeFormsOfSenders, takeVisitsAt, visitInside, type VisitRow } from "./visit-store.ts";

type Client = Pick<Tx, "$queryRaw" | "$executeRaw">;

const queryOf = (accountId: string, network: NetworkOfEvent): AddressQuery => ({ accountId, ip: network.ip, networkType: network.networkType, masked: !!network.masked });

/**
 * The lead an identity's visits count for: one per organisation, whichever way it is recognised.
 * Keyed by domain where there is one; a curated organisation's domain (its own AS's lead) by that
 * lead's id when the dataset has it.
 */
function leadOf(identity: Identity, curatedLeads: ReadonlyMap<string, string>, datasetId: string): Partial<NetworkOfEvent> {
  const domain = identity.organizationDomain?.toLowerCase() ?? null;
  const leadId = (domain && curatedLeads.get(`${datasetId} ${domain}`)) ?? leadIdOf(domain ?? identity.organizationName);
  return {
    leadId,
    organizationName: identity.organizationName,
    organizationDomain: domain,
    identitySource: identity.source,
    identityConfidence: identity.confidence,
  };
}

/** The leads of the datasets' own networks with these curated domains (an organisation with its own AS). */
async function curatedLeadsOf(tx: Client, wanted: { datasetId: string; domain: string }[]): Promise<Map<string, string>> {
  const known = wanted.filter((w) => knownOrganizationOfDomain(w.domain));
  if (!known.length) return new Map();
  const rows = await tx.$queryRaw<{ datasetId: string; domain: string; id: string }[]>`
    SELECT DISTINCT ON (l."datasetId", l."organizationDomain") l."datasetId", l."organizationDomain" AS domain, l.id FROM "Lead" l
    JOIN jsonb_to_recordset(${JSON.stringify(known)}::jsonb) AS w("datasetId" text, domain text) ON l."datasetId" = w."datasetId" AND l."organizationDomain" = w.domain
    WHERE l."identitySource" = 'network'
    ORDER BY l."datasetId", l."organizationDomain", l."firstVisitAt"`;
  return new Map(rows.map((r) => [`${r.datasetId} ${r.domain}`, r.id] as const));
}

/**
 * The other way round: an organisation's own network seen after evidence had named it (a branch
 * office's form, a declaration) visits the lead that evidence made, so that it stays one lead.
 * That lead exists (once joined, its source reads network), or this batch's evidence makes it. Only while the network's own lead does not
 * exist (where both exist, from before, each keeps its visits, and evidence joins the network's:
 * `curatedLeadsOf`). One read per batch that has events of networks with a domain.
 */
export async function joinLeadsOfEvidence(tx: Client, events: readonly QueueRow[]): Promise<readonly QueueRow[]> {
  const wanted = new Map<string, { datasetId: string; networkLead: string; evidenceLead: string }>();
  const madeByBatch = new Set(events.filter((r) => (r.event.network.identitySource ?? "network") !== "network").map((r) => `${r.datasetId} ${r.event.network.leadId}`));
  for (const { datasetId, event } of events) {
    const { pending, identitySource, organizationDomain, leadId } = event.network;
    if (pending || (identitySource ?? "network") !== "network" || !organizationDomain) continue;
    const evidenceLead = leadIdOf(organizationDomain.toLowerCase());
    if (evidenceLead !== leadId) wanted.set(`${datasetId} ${leadId}`, { datasetId, networkLead: leadId, evidenceLead });
  }
  if (!wanted.size) return events;
  const rows = await tx.$queryRaw<{ datasetId: string; networkLead: string; evidenceLead: string; evidenceLeadExists: boolean }[]>`
    SELECT w."datasetId", w."networkLead", w."evidenceLead",
      EXISTS (SELECT 1 FROM "Lead" l WHERE l."datasetId" = w."datasetId" AND l.id = w."evidenceLead") AS "evidenceLeadExists"
    FROM jsonb_to_recordset(${JSON.stringify([...wanted.values()])}::jsonb) AS w("datasetId" text, "networkLead" text, "evidenceLead" text)
    WHERE NOT EXISTS (SELECT 1 FROM "Lead" l WHERE l."datasetId" = w."datasetId" AND l.id = w."networkLead")`;
  const joins = rows.filter((r) => r.evidenceLeadExists || madeByBatch.has(`${r.datasetId} ${r.evidenceLead}`));
  if (!joins.length) return events;
  const joined = new Map(joins.map((r) => [`${r.datasetId} ${r.networkLead}`, r.evidenceLead] as const));
  return events.map((row) => {
    const to = joined.get(`${row.datasetId} ${row.event.network.leadId}`);
    return to && !row.event.network.pending ? { ...row, event: { ...row.event, network: { ...row.event.network, leadId: to } } } : row;
  });
}

/**
 * Splits the batch's events: those of lead networks and the pending ones whose address has an
 * identity (rewritten as visits of their organisation's lead), and the pending ones still
 * unidentified. `identify` reads in the batch's transaction; without it every pending event stays pending.
 */
export async function attributePending(
  tx: Tx,
  events: readonly QueueRow[],
  identify: WriterHooks["identify"],
): Promise<{ attributed: QueueRow[]; pending: QueueRow[] }> {
  const waiting = events.filter((r) => r.event.network.pending);
  if (!waiting.length) return { attributed: [...events], pending: [] };
  const identities = identify ? await identify(waiting.map((r) => queryOf(r.accountId, r.event.network)), tx) : [];
  const wanted = waiting.flatMap((r, i) => (identities[i]?.organizationDomain ? [{ datasetId: r.datasetId, domain: identities[i]!.organizationDomain!.toLowerCase() }] : []));
  const curated = await curatedLeadsOf(tx, wanted);
  const byRow = new Map(waiting.map((r, i) => [r, identities[i]] as const));
  const attributed: QueueRow[] = [];
  const pending: QueueRow[] = [];
  for (const row of events) {
    if (!row.event.network.pending) {
      attributed.push(row);
      continue;
    }
    const identity = byRow.get(row);
    if (!identity) {
      pending.push(row);
      continue;
    }
    const { pending: _, ...network } = row.event.network;
    attributed.push({ ...row, event: { ...row.event, network: { ...network, ...leadOf(identity, curated, row.datasetId) } } });
  }
  return { attributed, pending };
}

/** Keeps unidentified events, unlisted; how many. */
export async function storePending(tx: Client, rows: readonly QueueRow[]): Promise<number> {
  const values = rows.flatMap(({ accountId, datasetId, receivedAt, event }) => {
    const keys = addressKeys(event.network.ip);
    if (!keys) return [];
    return [{ accountId, datasetId, ip: event.network.ip, range: keys.range, networkType: event.network.networkType, masked: !!event.network.masked, visitorId: event.visitorId, receivedAt, event }];
  });
  if (!values.length) return 0;
  return tx.$executeRaw`
    INSERT INTO "PendingEvent" ("accountId", "datasetId", ip, "range", "networkType", masked, "visitorId", "receivedAt", event)
    SELECT r."accountId", r."datasetId", r.ip, r."range", r."networkType", r.masked, r."visitorId", r."receivedAt", r.event
    FROM jsonb_to_recordset(${JSON.stringify(values)}::jsonb) AS r("accountId" text, "datasetId" text, ip text, "range" text, "networkType" text,
      masked boolean, "visitorId" text, "receivedAt" timestamptz, event jsonb)`;
}

/** What the batch's pending events (attributed or not) teach once it committed. */
export function pendingNotes(events: readonly QueueRow[]): PendingNote[] {
  const notes = new Map<string, PendingNote>();
  const hoursNoted = new Set<string>();
  for (const { accountId, datasetId, receivedAt, event } of events) {
    const n = event.network;
    const email = event.type === "form" && !event.partial ? emailOf(event.fields) : undefined;
    const key = [accountId, datasetId, n.ip, email ?? ""].join("\n");
    const note = notes.get(key) ?? { accountId, datasetId, ip: n.ip, networkType: n.networkType, masked: !!n.masked, networkDomain: n.organizationDomain, ...(email && { email }), at: receivedAt, visitorIds: [], visitorHours: [] };
    notes.set(key, note);
    if (receivedAt > note.at) note.at = receivedAt;
    if (!note.visitorIds.includes(event.visitorId)) note.visitorIds.push(event.visitorId);
    const hourKey = `${key}\n${visitorHourOf(event.visitorId, receivedAt)}`;
    if (hoursNoted.has(hourKey)) continue;
    hoursNoted.add(hourKey);
    note.visitorHours.push({ visitorId: event.visitorId, at: receivedAt });
  }
  return [...notes.values()];
}

/** One sighting per visitor and clock hour. */
function distinctVisitorHours(seen: readonly PendingNote["visitorHours"][number][]): PendingNote["visitorHours"] {
  return [...new Map(seen.map((v) => [visitorHourOf(v.visitorId, v.at), v] as const)).values()];
}

/** The merged notes of two results (the writer's settling of several batches at once), without repeats. */
export function mergedNotes(a: readonly PendingNote[], b: readonly PendingNote[]): PendingNote[] {
  const notes = new Map<string, PendingNote>();
  for (const n of [...a, ...b]) {
    const key = [n.accountId, n.datasetId, n.ip, n.email ?? ""].join("\n");
    const seen = notes.get(key);
    notes.set(key, seen ? { ...n, at: seen.at > n.at ? seen.at : n.at, visitorIds: [...new Set([...seen.visitorIds, ...n.visitorIds])], visitorHours: distinctVisitorHours([...seen.visitorHours, ...n.visitorHours]) } : n);
  }
  return [...notes.values()];
}

/**
 * The e-mail addresses people of these visitors gave in forms (their visitor row, their pending
 * forms), by dataset and visitor id: a person known by a form is counted at every address of a
 * shared network their visitor comes from, so that a person moving between addresses (a
 * re-dialled home line, carrier-grade NAT) holds none of them by e-mail alone (moving_person).
 */
async function knownEmails(db: Client, notes: readonly PendingNote[]): Promise<Map<string, string>> {
  const wanted = [...new Set(notes.flatMap((n) => n.visitorIds.map((v) => JSON.stringify([n.datasetId, v]))))].map((k) => {
    const [datasetId, visitorId] = JSON.parse(k) as [string, string];
    return { datasetId, visitorId };
  });
  if (!wanted.length) return new Map();
  const rows = await db.$queryRaw<{ datasetId: string; visitorId: string; email: string | null; fields: Record<string, string> | null }[]>`
    WITH w AS (SELECT * FROM jsonb_to_recordset(${JSON.stringify(wanted)}::jsonb) AS w("datasetId" text, "visitorId" text))
    SELECT v."datasetId", v.id AS "visitorId", v.email, NULL::jsonb AS fields FROM "Visitor" v JOIN w ON v."datasetId" = w."datasetId" AND v.id = w."visitorId"
      WHERE v.email IS NOT NULL
    UNION ALL
    SELECT p."datasetId", p."visitorId", NULL, p.event->'fields' FROM "PendingEvent" p JOIN w ON p."datasetId" = w."datasetId" AND p."visitorId" = w."visitorId"
      WHERE p.event->>'type' = 'form' AND NOT coalesce((p.event->>'partial')::boolean, false)`;
  const emails = new Map<string, string>();
  for (const row of rows) {
    const email = row.email ?? (row.fields ? emailOf(row.fields) : undefined);
    if (email) emails.set(`${row.datasetId} ${row.visitorId}`, email);
  }
  return emails;
}

/** The pending events of a subject in a dataset (its visitor ids, or a form carrying the person's address). */
const ofSubject = (datasetId: string, visitorIds: readonly string[], subject: Subject) =>
  Prisma.sql`"datasetId" = ${datasetId} AND ("visitorId" IN ${jsonList(visitorIds.length ? [...visitorIds] : [""])}
    OR ${subject.type === "person" ? Prisma.sql`(event->>'type' = 'form' AND ${carries(Prisma.sql`event->'fields'`, subject.email)})` : Prisma.sql`false`})`;

/** The visitor ids of a person's pending forms in the dataset (they are the person's visitors too). */
export async function pendingVisitorsOf(client: Client, datasetId: string, subject: Subject): Promise<string[]> {
  if (subject.type !== "person") return [];
  const rows = await client.$queryRaw<{ id: string }[]>`
    SELECT DISTINCT "visitorId" AS id FROM "PendingEvent" WHERE "datasetId" = ${datasetId} AND event->>'type' = 'form' AND ${carries(Prisma.sql`event->'fields'`, subject.email)}`;
  return rows.map((r) => r.id);
}

/** Erases a subject's pending events in a dataset; how many. */
export function erasePending(client: Client, datasetId: string, visitorIds: readonly string[], subject: Subject): Promise<number> {
  return client.$executeRaw`DELETE FROM "PendingEvent" WHERE ${ofSubject(datasetId, visitorIds, subject)}`;
}

/** A subject's pending events in a dataset, oldest first, at most `limit` (export). */
export async function exportPending(client: Client, datasetId: string, visitorIds: readonly string[], subject: Subject, limit: number) {
  const rows = await client.$queryRaw<{ receivedAt: Date; ip: string; networkType: string; event: QueueRow["event"] }[]>`
    SELECT "receivedAt", ip, "networkType", event FROM "PendingEvent" WHERE ${ofSubject(datasetId, visitorIds, subject)} ORDER BY id LIMIT ${limit}`;
  return rows.map(({ receivedAt, ip, networkType, event }) => ({
    type: event.type,
    visitorId: event.visitorId,
    receivedAt: receivedAt.toISOString(),
    url: event.url,
    ip,
    networkType,
    ...(event.type === "form" ? { fields: event.fields } : { referrer: event.referrer ?? null, title: event.title ?? null }),
  }));
}

/** Retention: deletes up to `limit` pending events received before `before`; how many (the job repeats it). */
export const purgePending = (db: Client, before: Date, limit: number): Promise<number> =>
  db.$executeRaw`DELETE FROM "PendingEvent" WHERE id IN (SELECT id FROM "PendingEvent" WHERE "receivedAt" < ${before} LIMIT ${limit})`;

/** A withdrawn visit as the pending page view it was. */
function pendingRowOfVisit(v: VisitRow): QueueRow {
  const utm = Object.fromEntries(
    Object.entries({ source: v.utmSource, medium: v.utmMedium, campaign: v.utmCampaign, term: v.utmTerm, content: v.utmContent }).filter(([, value]) => value !== null),
  );
  const at = v.at.toISOString();
  return {
    accountId: v.accountId,
    datasetId: v.datasetId,
    receivedAt: v.at,
    event: {
      type: "pageview",
      visitorId: v.visitorId,
      url: v.url,
      ...(v.referrer !== null && { referrer: v.referrer }),
      ...(v.title !== null && { title: v.title }),
      ...(Object.keys(utm).length && { utm }),
      at,
      enrich: false,
      network: { leadId: "", organizationName: "", organizationDomain: null, asn: v.asn, networkType: v.networkType as NetworkOfEvent["networkType"], country: v.country, city: v.city, ip: v.ip, pending: true },
    },
  };
}

/** Network types whose visits an identity may have attributed (a shared network's address). */
const SHARED_TYPES = ["isp", "hosting", "mobile", "unknown"];

export interface Withdrawal {
  /** Visits taken back to pending. */
  visits: number;
  /** Leads left with no visit and removed (a lead its own network named stays). */
  removedLeads: RemovedLead[];
}

export interface WithdrawalOptions {
  /** Only this account's visits; all accounts' for pooled evidence. */
  accountId?: string;
  /** Told of the leads removed, in the withdrawal's transaction (their lead.removed). */
  onLeadsRemoved?: OnLeadsRemoved;
}

/**
 * Withdraws attributions that the evidence no longer supports: the page views inside these
 * networks (identity ranges, or a declared network's CIDR) that an identity attributed (a shared
 * network's address, in a dataset without masking) and whose address now has no identity, or
 * another organisation's (an address found shared, a prefix found to hold another organisation's
 * line, a PTR name found to be an access line's, a domain found to be an operator's, the only
 * person's evidence erased or lapsed, a declaration removed), go back to pending with the forms
 * their visitors sent to the lead, and their leads' counts follow. Of one account, or of every
 * account (pooled evidence). Reads "Visit" by its range index (visitInside), whatever the history held.
 */
export async function withdrawUnsupported(
  db: Db,
  identities: Pick<IdentityStore, "identitiesOf">,
  networks: readonly string[],
  { accountId, onLeadsRemoved }: WithdrawalOptions = {},
): Promise<Withdrawal> {
  const none: Withdrawal = { visits: 0, removedLeads: [] };
  if (!networks.length) return none;
  const attributed = await db.$queryRaw<{ accountId: string; datasetId: string; leadId: string; ip: string; networkType: string; domain: string | null; name: string }[]>`
    SELECT DISTINCT v."accountId", v."datasetId", v."leadId", v.ip, v."networkType", l."organizationDomain" AS domain, l."organizationName" AS name
    FROM "Visit" v
      JOIN "Lead" l ON l."datasetId" = v."datasetId" AND l.id = v."leadId" JOIN "Dataset" d ON d.id = v."datasetId"
    WHERE ${visitInside(networks)} AND ${accountId === undefined ? Prisma.sql`true` : Prisma.sql`v."accountId" = ${accountId}`}
      AND v."networkType" = ANY(${SHARED_TYPES}::text[]) AND NOT d."allowIpMasking"`;
  if (!attributed.length) return none;
  const now = await identities.identitiesOf(attributed.map((a) => ({ accountId: a.accountId, ip: a.ip, networkType: a.networkType as AddressQuery["networkType"] })));
  const same = (a: (typeof attributed)[number], identity: Identity | undefined) =>
    !!identity && ((!!identity.organizationDomain && identity.organizationDomain.toLowerCase() === a.domain?.toLowerCase()) || identity.organizationName === a.name);
  const wrong = attributed.filter((a, i) => !same(a, now[i])).map(({ accountId, datasetId, leadId, ip }) => ({ accountId, datasetId, leadId, ip }));
  if (!wrong.length) return none;
  return db.$transaction(async (tx) => {
    await holdForWriting(tx);
    const gone = await takeVisitsAt(tx, wrong);
    await storePending(tx, [...gone.map(pendingRowOfVisit), ...(await takeFormsOfWithdrawn(tx, gone))]);
    const counts = new Map<string, { accountId: string; datasetId: string; leadId: string; n: number }>();
    for (const v of gone) {
      const key = `${v.datasetId} ${v.leadId}`;
      counts.set(key, { accountId: v.accountId, datasetId: v.datasetId, leadId: v.leadId, n: (counts.get(key)?.n ?? 0) + 1 });
    }
    // a lead that only such visits made is no lead
    const taken = [...counts.keys()].sort().map((k) => counts.get(k)!);
    const { removed } = await subtractVisits(tx, taken, { keepNetworkLeads: true });
    if (removed.length) await onLeadsRemoved?.(tx, removed, "withdrawn");
    return { visits: gone.length, removedLeads: removed };
  });
}

/**
 * Withdraws what these recomputed identity ranges no longer support (an account's ranges in its
 * visits, pooled ranges in every account's): erasure and retention after they removed evidence.
 */
export async function withdrawInRanges(
  db: Db,
  identities: Pick<IdentityStore, "identitiesOf">,
  ranges: readonly { scope: string; range: string }[],
  onLeadsRemoved?: OnLeadsRemoved,
): Promise<Withdrawal> {
  const byScope = new Map<string, Set<string>>();
  for (const { scope, range } of ranges) byScope.set(scope, (byScope.get(scope) ?? new Set()).add(range));
  const total: Withdrawal = { visits: 0, removedLeads: [] };
  for (const scope of [...byScope.keys()].sort()) {
    const one = await withdrawUnsupported(db, identities, [...byScope.get(scope)!], { accountId: scope === POOL ? undefined : scope, onLeadsRemoved });
    total.visits += one.visits;
    total.removedLeads.push(...one.removedLeads);
  }
  return total;
}

/** The forms the withdrawn visits' visitors sent to the lead (from the same address: a form carries none), taken back as pending forms. */
async function takeFormsOfWithdrawn(tx: Client, gone: readonly VisitRow[]): Promise<QueueRow[]> {
  const senders = [...new Map(gone.map((v) => [`${v.datasetId} ${v.leadId} ${v.visitorId}`, v] as const)).values()];
  if (!senders.length) return [];
  const forms = await takeFormsOfSenders(tx, senders);
  const senderOf = new Map(senders.map((s) => [`${s.datasetId} ${s.leadId} ${s.visitorId}`, s] as const));
  return forms.map((f): QueueRow => {
    const s = senderOf.get(`${f.datasetId} ${f.leadId} ${f.visitorId}`)!;
    const network = { leadId: "", organizationName: "", organizationDomain: null, asn: s.asn, networkType: s.networkType as NetworkOfEvent["networkType"], country: s.country, city: s.city, ip: s.ip, pending: true as const };
    return { accountId: s.accountId, datasetId: f.datasetId, receivedAt: f.at, event: { type: "form", visitorId: f.visitorId, url: f.url, ...(f.partial && { partial: true }), fields: f.fields, at: f.at.toISOString(), enrich: false, network } };
  });
}

/** Addresses taken per backfill transaction. */
const BACKFILL_ADDRESSES = 500;

export interface PendingAttributionDeps {
  identities: IdentityStore;
  /** Writes taken pending events (batch.ts writeEvents with the writer's hooks) in the transaction. */
  write: (tx: Tx, rows: QueueRow[]) => Promise<IngestResult>;
  /** After a backfill's or a withdrawal's transaction committed (wakes the job queue for its webhook events). */
  onCommitted?: () => void;
  /** The leads a withdrawal removed, in its transaction (their lead.removed). */
  onLeadsRemoved?: OnLeadsRemoved;
  logger?: Logger;
}

/** Learning from pending events and backfilling them; one per process (services/index.ts): learning and backfilling share the identity store, the writer and the webhook hooks. */
export class PendingAttribution {
  private readonly identities: IdentityStore;
  private readonly write: PendingAttributionDeps["write"];
  private readonly onCommitted: (() => void) | undefined;
  private readonly onLeadsRemoved: OnLeadsRemoved | undefined;
  private readonly logger: Logger | undefined;

  constructor(
    private readonly db: Db,
    { identities, write, onCommitted, onLeadsRemoved, logger }: PendingAttributionDeps,
  ) {
    this.identities = identities;
    this.write = write;
    this.onCommitted = onCommitted;
    this.onLeadsRemoved = onLeadsRemoved;
    this.logger = logger;
  }

  /**
   * After a batch committed: its forms' business e-mail domains and its addresses' PTR names
   * become evidence; attributions of the ranges they touch that it no longer supports are
   * withdrawn, then the pending events of those ranges are backfilled.
   */
  async learn(notes: readonly PendingNote[]): Promise<number> {
    if (!notes.length) return 0;
    const known = await knownEmails(this.db, notes.filter((n) => !n.masked));
    // at the time the events were received (a writer catching up after an outage, a replay), not the learning step's
    const evidence = (n: PendingNote, email: string) => ({ accountId: n.accountId, ip: n.ip, networkType: n.networkType, email, networkDomain: n.networkDomain, masked: n.masked, at: n.at });
    await this.identities.recordFormEvidence(notes.flatMap((n) => (n.email ? [evidence(n, n.email)] : [])));
    // where people known by a form were seen: a person moving between addresses holds none of them
    await this.identities.recordPresence(
      notes.flatMap((n) => [...new Set(n.visitorIds.flatMap((v) => known.get(`${n.datasetId} ${v}`) ?? []))].filter((e) => e !== n.email).map((e) => evidence(n, e))),
    );
    await this.identities.learnReverseDns(notes.map((n) => ({ accountId: n.accountId, ip: n.ip, networkType: n.networkType, networkDomain: n.networkDomain, masked: n.masked })));
    await this.identities.recordActivity(notes);
    const ranges = new Map<string, Set<string>>();
    const touch = (accountId: string, ip: string) => {
      const range = addressKeys(ip)?.range;
      if (range) ranges.set(accountId, (ranges.get(accountId) ?? new Set()).add(range));
    };
    for (const n of notes) touch(n.accountId, n.ip);
    // a known person seen at a new address may have stopped holding the addresses of their earlier visits
    const movers = notes.flatMap((n) => n.visitorIds.filter((v) => known.has(`${n.datasetId} ${v}`)).map((visitorId) => ({ datasetId: n.datasetId, visitorId })));
    if (movers.length) {
      const earlier = await this.db.$queryRaw<{ accountId: string; ip: string }[]>`
        SELECT DISTINCT v."accountId", v.ip FROM "Visit" v JOIN jsonb_to_recordset(${JSON.stringify(movers)}::jsonb) AS m("datasetId" text, "visitorId" text)
          ON v."datasetId" = m."datasetId" AND v."visitorId" = m."visitorId"
        WHERE v."networkType" IN ('isp', 'hosting', 'mobile', 'unknown')`;
      for (const e of earlier) touch(e.accountId, e.ip);
    }
    // every range whose identities were recomputed meanwhile (an operator's domain found, pooled PTR evidence): wherever its visits are
    const pooled: string[] = [];
    for (const { scope, range } of this.identities.takeRecomputed()) {
      if (scope === POOL) pooled.push(range);
      else ranges.set(scope, (ranges.get(scope) ?? new Set()).add(range));
    }
    let written = 0;
    let withdrawn = (await this.withdraw(pooled)).visits;
    for (const [accountId, set] of ranges) {
      withdrawn += (await this.withdraw([...set], accountId)).visits;
      written += await this.backfillRanges(accountId, [...set]);
    }
    if (written || withdrawn) this.logger?.debug("pending events attributed", { events: written, withdrawn });
    return written;
  }

  /** The account's pending addresses in these ranges that have an identity row (others cannot have become identified by evidence). */
  async backfillRanges(accountId: string, ranges: readonly string[]): Promise<number> {
    const candidates = await this.identities.rangesWithIdentities(accountId, ranges);
    if (!candidates.length) return 0;
    const addresses = await this.db.$queryRaw<{ ip: string; networkType: string; masked: boolean }[]>`
      SELECT DISTINCT ip, "networkType", masked FROM "PendingEvent" WHERE "accountId" = ${accountId} AND "range" = ANY(${candidates}::text[])`;
    return addresses.length ? this.attributeAddresses(accountId, addresses) : 0;
  }

  /** What a removed declaration of the account attributed and nothing else supports goes back to pending (its visits by the range index). */
  withdrawNetwork(accountId: string, cidr: string): Promise<Withdrawal> {
    return this.withdraw([cidr], accountId);
  }

  /** The account's pending events inside a network it declared (they are its organisation's now), found by its ranges (the (accountId, range) index). */
  async backfillNetwork(accountId: string, cidr: string): Promise<number> {
    const ranges = rangesOf(cidr);
    const inRanges = ranges ? Prisma.sql`AND "range" = ANY(${ranges}::text[])` : Prisma.empty;
    const addresses = await this.db.$queryRaw<{ ip: string; networkType: string; masked: boolean }[]>`
      SELECT DISTINCT ip, "networkType", masked FROM "PendingEvent" WHERE "accountId" = ${accountId} ${inRanges} AND ip::inet <<= ${cidr}::inet`;
    return addresses.length ? this.attributeAddresses(accountId, addresses) : 0;
  }

  /** Writes the pending events at these addresses of the account whose identity attributes them (in transactions of BACKFILL_ADDRESSES addresses). */
  private async attributeAddresses(accountId: string, addresses: { ip: string; networkType: string; masked: boolean }[]): Promise<number> {
    const found = await this.identities.identitiesOf(addresses.map((a) => ({ accountId, ip: a.ip, networkType: a.networkType as AddressQuery["networkType"], masked: a.masked })));
    const ips = [...new Set(addresses.filter((_, i) => found[i]).map((a) => a.ip))].sort();
    let written = 0;
    for (let i = 0; i < ips.length; i += BACKFILL_ADDRESSES) {
      const part = ips.slice(i, i + BACKFILL_ADDRESSES);
      const result = await this.db.$transaction(async (tx) => {
        // as a writer's batch: an erasure waits for it, or it waits for the erasure
        await holdForWriting(tx);
        const taken = await tx.$queryRaw<{ accountId: string; datasetId: string; receivedAt: Date; event: QueueRow["event"] }[]>`
          DELETE FROM "PendingEvent" WHERE id IN (
            SELECT id FROM "PendingEvent" WHERE "accountId" = ${accountId} AND ip = ANY(${part}::text[]) ORDER BY id FOR UPDATE SKIP LOCKED)
          RETURNING "accountId", "datasetId", "receivedAt", event`;
        // attributed again in the transaction (writeEvents): what lost its identity meanwhile stays pending
        return taken.length ? this.write(tx, taken.map((r) => ({ accountId: r.accountId, datasetId: r.datasetId, receivedAt: r.receivedAt, event: r.event }))) : undefined;
      });
      if (result) {
        written += result.events;
        this.onCommitted?.();
      }
    }
    return written;
  }

  /** Withdraws what the evidence of these networks no longer supports (withdrawUnsupported), then tells `onWithdrawn`. */
  private async withdraw(networks: readonly string[], accountId?: string): Promise<Withdrawal> {
    const withdrawal = await withdrawUnsupported(this.db, this.identities, networks, { accountId, onLeadsRemoved: this.onLeadsRemoved });
    if (withdrawal.visits) this.onCommitted?.();
    return withdrawal;
  }
}
