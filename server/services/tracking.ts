// Tracking as the partner API sees it: IP and domain look-ups, and a lead's visits.
import type { components } from "../../generated/openapi.ts";
import { Prisma, type Visit } from "../../generated/prisma/client.ts";
import type { ContactProfile } from "../contacts/profile.ts";
import type { QueryOf } from "../domain/types.ts";
import { Invalid, NotFound } from "../domain/errors.ts";
import { registrableDomain } from "../identity/domain-names.ts";
import type { DomainEvidence, DomainSource } from "../tracking/write/domain-evidence.ts";
import { LEAD_NETWORKS, type NetworkType } from "../tracking/ipdata/network-class.ts";
import { knownOrganizationOfDomain } from "../identity/organizations.ts";
import type { Resolver } from "../tracking/ipdata/resolver.ts";
import type { IdentityStore } from "../identity/identities.ts";
import * as access from "./access.ts";
import * as contacts from "./contacts.ts";
import { notExcluded } from "../domain/exclusions.ts";
import { decodeCursor, toPage } from "./paging.ts";
import * as networks from "./networks.ts";
import type { NetworkDeps } from "./networks.ts";

type Schemas = components["schemas"];
export type IpLookup = Schemas["IpLookupResponse"];
export type DomainLookup = Schemas["DomainLookupResponse"];
export type VisitDto = Schemas["VisitDTO"];
type EnrichmentState = NonNullable<VisitDto["visitor"]["enrichment"]>;
/** A lead's domainSource (a declaration's included, which the domain evidence of a lead's own network never sets). */
type LeadDomainSource = DomainSource | "declared";

export type VisitQuery = QueryOf<"listLeadVisits"> & { leadId: string };

/** A visit of the listing, with its visitor's contact state. */
type VisitRow = Omit<Visit, "accountId" | "datasetId" | "leadId" | "ip" | "asn" | "networkType"> & {
  networkType: NetworkType;
  email: string | null;
  enrichment: EnrichmentState | null;
};

const HOST = /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/;

function readPosition(value: unknown): { at: string; id: string } | undefined {
  const { t, id } = (value ?? {}) as { t?: unknown; id?: unknown };
  if (typeof t !== "string" || Number.isNaN(Date.parse(t)) || typeof id !== "string" || !/^\d+$/.test(id)) return undefined;
  return { at: t, id };
}

const present = <T>(entries: [string, T | null][]) => Object.fromEntries(entries.filter(([, v]) => v !== null)) as Record<string, T>;

/** The strongest source among leads' (declared > curated > email > reverse_dns). */
const strongest = (sources: (LeadDomainSource | null)[]): LeadDomainSource | null =>
  (["declared", "curated", "email", "reverse_dns"] as const).find((s) => sources.includes(s)) ?? null;

export interface TrackingDeps extends NetworkDeps {
  resolver: () => Resolver;
  domainEvidence: DomainEvidence;
  identities: IdentityStore;
}

/** The visitor's profile, only once its enrichment was paid for. */
async function contactOf(deps: Pick<TrackingDeps, "db">, row: VisitRow, cache: Map<string, ContactProfile | null>): Promise<ContactProfile | null> {
  if (row.enrichment !== "enriched" || !row.email) return null;
  if (!cache.has(row.email)) cache.set(row.email, (await contacts.find(deps, row.email)) ?? null);
  return cache.get(row.email)!;
}

/**
 * Free: open network data about an address, never about a person. Without a curated domain, a
 * lead network's domain comes from reverse DNS (cached per /24, bounded in time). `identity`:
 * what the key's account knows of the organisation behind it (server/identity).
 */
export async function ipLookup(deps: TrackingDeps, accountId: string, ipParam: string): Promise<IpLookup> {
  const ip = ipParam.trim();
  const resolution = deps.resolver().resolve(ip, { overrides: await networks.current(deps) });
  if (!resolution) throw new Invalid("ip is not an IPv4 or IPv6 address", [{ location: "query", field: "ip", message: "is not an IP address" }]);
  if (resolution.asn === null) throw new NotFound("No announced network holds this address (private, reserved or unrouted)", "network_not_found");
  const identity = await deps.identities.describe(accountId, ip, resolution.networkType);
  if (resolution.organizationDomain || !LEAD_NETWORKS.has(resolution.networkType)) return { ip, ...resolution, identity };
  const domain = await deps.domainEvidence.reverseDomain(ip);
  return { ip, ...resolution, organizationDomain: domain, domainSource: domain ? "reverse_dns" : null, identity };
}

/** Free: the curated organisation of the domain (if any) and the account's visible leads of it. */
export async function domainLookup(deps: TrackingDeps, accountId: string, domainParam: string): Promise<DomainLookup> {
  const domain = domainParam.trim().toLowerCase().replace(/\.$/, "");
  if (!HOST.test(domain)) throw new Invalid("domain is not a host name", [{ location: "query", field: "domain", message: "is not a host name" }]);
  const registrable = registrableDomain(domain) ?? domain;
  const known = knownOrganizationOfDomain(domain) ?? knownOrganizationOfDomain(registrable);
  const leads = await deps.db.$queryRaw<
    { datasetId: string; id: string; organizationName: string; domainSource: LeadDomainSource | null; visitCount: number; lastVisitAt: Date }[]
  >`
    SELECT l."datasetId", l.id, l."organizationName", l."domainSource"::text AS "domainSource", l."visitCount", l."lastVisitAt" FROM "Lead" l
    WHERE l."accountId" = ${accountId} AND lower(l."organizationDomain") IN (${domain}, ${registrable}) AND ${notExcluded}
    ORDER BY l."lastVisitAt" DESC, l."datasetId", l.id LIMIT 100`;
  if (!known && !leads.length) throw new NotFound(`Nothing is known of ${domain}`, "domain_not_found");
  return {
    domain,
    organizationName: known?.name ?? leads[0]?.organizationName ?? null,
    domainSource: known ? "curated" : strongest(leads.map((l) => l.domainSource)),
    country: known?.country ?? null,
    asns: [...(known?.asns ?? [])],
    leads: leads.map((l) => ({
      datasetId: l.datasetId,
      leadId: l.id,
      organizationName: l.organizationName,
      domainSource: l.domainSource,
      visitCount: l.visitCount,
      lastVisitAt: l.lastVisitAt.toISOString(),
    })),
  };
}

/**
 * A visible lead's visits, newest first. 404 for a lead that does not exist or that an exclusion
 * rule hides; visits of a visitor excluded by a `use_id` rule (its visitor id) are left out.
 */
export async function visits(deps: TrackingDeps, accountId: string, query: VisitQuery): Promise<Schemas["GetAllResponseVisitDTO"]> {
  const after = decodeCursor(query.cursor, readPosition);
  const actor = await access.actor(deps, accountId, query.email);
  await access.dataset(deps, accountId, query.datasetId);
  await access.requireAccess(deps, actor, query.datasetId);
  const [visible] = await deps.db.$queryRaw<unknown[]>`
    SELECT 1 FROM "Lead" l WHERE l."datasetId" = ${query.datasetId} AND l.id = ${query.leadId} AND ${notExcluded}`;
  if (!visible) throw new NotFound(`Lead ${query.leadId} does not exist in dataset ${query.datasetId}`, "lead_not_found");
  const limit = query.limit;
  const rows = await deps.db.$queryRaw<VisitRow[]>`
    SELECT v.id, v."visitorId", v.at, v.url, v.referrer, v.title, v."utmSource", v."utmMedium", v."utmCampaign", v."utmTerm",
           v."utmContent", v."networkType", v.country, v.city, vr.email, vr.enrichment::text AS enrichment
    FROM "Visit" v JOIN "Visitor" vr ON vr."datasetId" = v."datasetId" AND vr.id = v."visitorId"
    WHERE v."datasetId" = ${query.datasetId} AND v."leadId" = ${query.leadId}
      AND NOT EXISTS (SELECT 1 FROM "DatasetExclusion" e WHERE e."datasetId" = v."datasetId"
                      AND e.type = 'use_id'::"ExclusionType" AND e."valueKey" = v."visitorId")
      ${after ? Prisma.sql`AND (v.at, v.id) < (${after.at}::timestamptz, ${BigInt(after.id)})` : Prisma.empty}
    ORDER BY v.at DESC, v.id DESC
    LIMIT ${limit + 1}`;
  const profiles = new Map<string, ContactProfile | null>();
  const data: VisitDto[] = [];
  for (const row of rows) {
    data.push({
      visitId: String(row.id),
      visitorId: row.visitorId,
      at: row.at.toISOString(),
      url: row.url,
      referrer: row.referrer,
      title: row.title,
      utm: present([
        ["source", row.utmSource],
        ["medium", row.utmMedium],
        ["campaign", row.utmCampaign],
        ["term", row.utmTerm],
        ["content", row.utmContent],
      ]),
      networkType: row.networkType,
      country: row.country,
      city: row.city,
      visitor: { email: row.email, enrichment: row.enrichment, contact: await contactOf(deps, row, profiles) },
    });
  }
  return toPage(data, limit, (last) => ({ t: last.at, id: last.visitId }));
}
