// Identities behind shared networks: "organisation at address", learned per account from evidence
// (forms' business e-mail domains, reverse DNS) or declared by the partner (declared-networks.ts),
// with the precision guards of rules.ts. The only code that writes IdentityEvidence and
// NetworkIdentity. Nothing here holds a visitor id or an e-mail address: a form's evidence is its
// domain and a keyed hash of the address (the erasure key's HMAC, the same as an erasure
// tombstone's e-mail hash), which tells distinct people apart and finds a person's contribution.
//
// How it is wired (server/tracking/write/pending.ts holds the pending events and their backfill):
// - collector: keeps page views and forms of isp, hosting, mobile and unknown networks (pending).
// - writer, per batch: `identitiesOf(queries, tx)` (two statements for the whole batch) gives
//   each pending address its identity; at write time only an address's own (unit) identity or a
//   declared one attributes, the visit becoming one of the lead of `organizationDomain` (or of the
//   declared name without a domain), with identitySource/identityConfidence raised when stronger;
//   the others stay pending.
// - writer, after each batch commits (off the hot path): `recordFormEvidence` for its pending
//   forms (business domains; free-mail marks), `learnReverseDns` for their addresses (at most once
//   per address and cache time), both with `masked: true` for a dataset with allowIpMasking
//   (nothing is then recorded); then, per range touched, attributions the evidence no longer
//   supports are withdrawn and pending events of addresses with an identity are backfilled.
// - erasure: `contributorKeys(emails)`, then `eraseContributor(accountId, keys)`. Retention:
//   `expire()` from the daily retention job.
import type { components } from "../../generated/openapi.ts";
import { Prisma } from "../../generated/prisma/client.ts";
import type { IdentityConfig, ReverseDnsConfig } from "../config.ts";
import type { Db } from "../db/database.ts";
import type { Logger } from "../logging.ts";
import { businessEmailDomain, domainOfPtr, isFreeMail, lookUpPtr, readsLikeBusinessLine, readsLikeDynamicLine } from "./domain-names.ts";
import type { NetworkType } from "../domain/types.ts";
import { hasher, keyOf as erasureKeyOf } from "./erasure-key.ts";
import { addressKeys, gatewayOf, prefixLength } from "./addresses.ts";
import type { AddressQuery, Identity, IdentitySource } from "./types.ts";
import { attributes, CONSUMERS, type Evidence, type EvidenceKind, type EvidenceSource, type Guard, HOST_TENANTS, identitiesOfRange, type IdentityRow, OPERATOR_UNITS } from "./rules.ts";
import { isOperatorDomain } from "./operator-domains.ts";
import { memory } from "./memory.ts";
import { AddressActivityStore } from "./activity.ts";

type Tx = Prisma.TransactionClient;
/** What a read needs: the database, or a transaction on it. */
type Client = Pick<Db, "$queryRaw" | "$executeRaw">;
type AddressIdentity = components["schemas"]["AddressIdentity"];

/** The scope of reverse DNS evidence pooled across accounts (TRACKING_IDENTITY_POOL_REVERSE_DNS). */
export const POOL = "*";

/** Networks whose addresses learn evidence: a mobile carrier's hold declared identities only, a lead network is its own organisation. */
const LEARNING: ReadonlySet<NetworkType> = new Set(["isp", "hosting", "unknown"]);

/** Advisory-lock namespace of a range's recomputation ("iden"); the second key is a hash of scope and range. */
const RANGE_LOCK = 0x6964656e;
/** Reverse DNS look-ups at once, and a failed one's retry delay. */
const PARALLEL_LOOKUPS = 8;
const FAILURE_RETRY_MS = 5 * 60_000;
/** Addresses (and scope-address pairs) the process remembers having asked and recorded. */
const REMEMBERED = 50_000;

/** A form sent from an address with an e-mail address (free-mail and operator domains count for nothing). */
export interface FormEvidence {
  accountId: string;
  ip: string;
  networkType: NetworkType;
  email: string;
  /** When it was sent (default: now). */
  at?: Date;
  /** The AS organisation's domain, when known (the resolver's curated one): an operator's own domain names nobody. */
  networkDomain?: string | null;
  /** The dataset masks addresses (allowIpMasking): the address is a.b.c.0 and records no evidence. */
  masked?: boolean;
}

/** The visitors seen at an address, each once per clock hour (the around-the-clock rule's counts). */
export interface SeenAt {
  ip: string;
  networkType: NetworkType;
  masked?: boolean;
  visitorHours: readonly { visitorId: string; at: Date }[];
}

/** A PTR answer for an address; `accountId` may be absent when reverse DNS is pooled. */
export interface PtrEvidence {
  accountId?: string;
  ip: string;
  networkType: NetworkType;
  host: string | null;
  at?: Date;
  networkDomain?: string | null;
  masked?: boolean;
}

/** Whether evidence of this address may be recorded: a learning network's, not masked. */
const learnsFrom = (e: { networkType: NetworkType; masked?: boolean }) => LEARNING.has(e.networkType) && !e.masked;

interface NewEvidence {
  scope: string;
  range: string;
  unit: string;
  kind: EvidenceKind;
  domain: string;
  contributor: string;
  at: Date;
}

/** A range of one scope: what a recomputation takes. */
type RangePair = { scope: string; range: string };

/** A stored NetworkIdentity row as the look-ups read it. */
type StoredRow = IdentityRow & { scope: string };

const rangeKey = (scope: string, range: string) => `${scope} ${range}`;
const accountOf = (scope: string) => (scope === POOL ? null : scope);
const versionOfRange = (range: string) => (range.includes(":") ? 6 : 4);

/** The keyed hash that stands for a person's e-mail address (trimmed, lower case): the erasure tombstone's. */
export const contributorKey = (key: string, email: string): string => hasher(key).email(email);

/** Why the network type stops an attributing identity, if it does: mobile and lead networks take declared ones only, hosting and unknown ones PTR-backed ones. */
export function networkGuard(networkType: NetworkType, source: EvidenceSource | null): Guard | null {
  if (networkType === "isp") return null;
  if ((networkType === "hosting" || networkType === "unknown") && source === "reverse_dns") return null;
  return "network_type";
}

export interface IdentityStoreOptions {
  identities: IdentityConfig;
  reverseDns: ReverseDnsConfig;
  now?: () => Date;
  logger?: Logger;
}

/** Whether a domain is the network's own (the AS organisation's domain): an operator's own domain names nobody. */
const sameDomain = (domain: string, networkDomain: string | null | undefined) => !!networkDomain && domain === networkDomain.toLowerCase();

/** An evidence row's key (the unique index's columns). */
const evidenceKey = (row: Pick<NewEvidence, "scope" | "unit" | "kind" | "domain" | "contributor">) => [row.scope, row.unit, row.kind, row.domain, row.contributor].join("\n");

/** Evidence rows without duplicates of one key (one statement may not update a row twice): the latest time of each. */
function deduplicated(rows: readonly NewEvidence[]): NewEvidence[] {
  const byKey = new Map<string, NewEvidence>();
  for (const row of rows) {
    const key = evidenceKey(row);
    const seen = byKey.get(key);
    if (!seen || seen.at < row.at) byKey.set(key, row);
  }
  return [...byKey.values()];
}

/** The decisive stored row of an address: its unit's, else the most specific prefix's; the account's, else the pool's. */
function decisive(rows: readonly StoredRow[], accountId: string): StoredRow | undefined {
  return [...rows].sort((a, b) => Number(b.scope === accountId) - Number(a.scope === accountId) || prefixLength(b.prefix) - prefixLength(a.prefix))[0];
}

/** An attributing identity of a stored row, unless the address's network type stops it. */
function identityOfRow(row: StoredRow | undefined, networkType: NetworkType): Identity | undefined {
  if (!row || !attributes(row) || networkGuard(networkType, row.source)) return undefined;
  return { organizationName: row.organizationName!, organizationDomain: row.organizationDomain, source: row.source!, confidence: row.confidence, prefix: row.prefix };
}

/**
 * The identity store (how it is wired: the top of this file). Its state: the deployment's hash key,
 * the PTR answers and recorded scope-unit pairs it remembers within the reverse DNS cache time, and
 * the ranges recomputed since the last `takeRecomputed`.
 */
export class IdentityStore {
  private readonly reverseDns: ReverseDnsConfig;
  private readonly now: () => Date;
  private readonly logger: Logger | undefined;
  private readonly windowMs: number;
  /** TRACKING_IDENTITY_POOL_REVERSE_DNS: PTR evidence pooled across accounts. */
  private readonly pooled: boolean;
  /** The deployment's hash key (ErasureKey, made on first use). */
  private hashKey: string | undefined;
  /** PTR answers by unit, and the scope-unit pairs recorded, within the reverse DNS cache time. */
  private readonly ptrAnswers = memory<{ host: string | null; keepMs: number }>(REMEMBERED);
  /** PTR answers of IPv6 sites' gateways (::1 of the /48), by range, within the reverse DNS cache time. */
  private readonly siteAnswers = memory<Promise<string | null>>(REMEMBERED);
  private readonly recorded = memory<true>(REMEMBERED);
  /** When visits come from each address (the around-the-clock rule). */
  private readonly activity: AddressActivityStore;
  /**
   * Units this process recorded a PTR domain or a business-line mark of, within the evidence
   * window (a PTR name outlives the DNS cache time; a short cache must not leave a host's visits
   * uncounted): the only ones whose visits are counted by hour.
   */
  private readonly ptrNamed = memory<true>(REMEMBERED);
  /** The (scope, range) pairs recomputed since the last `takeRecomputed`: where attributions may have lost their support (withdrawal, pending.ts). */
  private readonly recomputed = new Map<string, { scope: string; range: string }>();

  constructor(
    private readonly db: Db,
    { identities, reverseDns, now = () => new Date(), logger }: IdentityStoreOptions,
  ) {
    this.windowMs = identities.windowDays * 86_400_000;
    this.pooled = identities.poolReverseDns;
    this.reverseDns = reverseDns;
    this.now = now;
    this.logger = logger;
    this.activity = new AddressActivityStore(db);
  }

  /**
   * The ranges recomputed since the last call, and forgets them. Each caller that makes
   * recomputations takes them (the learning step, erasure, retention), so the map stays small.
   */
  takeRecomputed(): { scope: string; range: string }[] {
    const taken = [...this.recomputed.values()];
    this.recomputed.clear();
    return taken;
  }

  /**
   * The identity of each address (undefined: none that attributes), in the order asked: a
   * declared network of the account holding it wins; else the decisive stored row (rules.ts)
   * if it attributes and the network type allows it. Two statements, whatever the number of
   * addresses; nothing cached, so evidence recorded by any process counts at once. `client`: a
   * transaction to read in (the writer's batch), else the database.
   */
  async identitiesOf(queries: readonly AddressQuery[], client: Client = this.db): Promise<(Identity | undefined)[]> {
    // a batch repeats its addresses: each distinct one is asked once
    const queryKey = (q: AddressQuery) => `${q.accountId} ${q.ip} ${q.networkType} ${q.masked ? 1 : 0}`;
    const distinct = [...new Map(queries.map((q) => [queryKey(q), q] as const)).values()];
    // one after the other: a transaction runs one statement at a time
    const rows = await this.storedRows(distinct, client);
    const declared = await this.declaredOf(distinct, client);
    const answers = new Map(
      distinct.map((q, i): [string, Identity | undefined] => {
        const d = declared.get(i);
        if (d) return [queryKey(q), { organizationName: d.organizationName, organizationDomain: d.organizationDomain, source: "declared", confidence: 1, prefix: d.cidr }];
        return [queryKey(q), identityOfRow(decisive(rows.get(i) ?? [], q.accountId), q.networkType)];
      }),
    );
    return queries.map((q) => answers.get(queryKey(q)));
  }

  /** Of these ranges, those where the account's scopes hold an unexpired identity row (backfill's candidates). */
  async rangesWithIdentities(accountId: string, ranges: readonly string[]): Promise<string[]> {
    if (!ranges.length) return [];
    const rows = await this.db.$queryRaw<{ range: string }[]>`
      SELECT DISTINCT "range" FROM "NetworkIdentity"
      WHERE scope = ANY(${this.scopesOf(accountId)}::text[]) AND "range" = ANY(${[...ranges]}::text[]) AND "expiresAt" > ${this.now()} AND "organizationName" IS NOT NULL`;
    return rows.map((r) => r.range);
  }

  /** One address's identity (`identitiesOf` for one). */
  async identityOf(accountId: string, ip: string, networkType: NetworkType, options: { masked?: boolean } = {}): Promise<Identity | undefined> {
    return (await this.identitiesOf([{ accountId, ip, networkType, ...options }]))[0];
  }

  /** What the account knows of an address, for GET /v1/ip-lookup: the identity, its guard, its evidence in counts. */
  async describe(accountId: string, ip: string, networkType: NetworkType): Promise<AddressIdentity | null> {
    const query = { accountId, ip, networkType };
    const [rows, declared] = await Promise.all([this.storedRows([query]), this.declaredOf([query])]);
    const row = decisive(rows.get(0) ?? [], accountId);
    const d = declared.get(0);
    const evidence = { declared: d?.holding ?? 0, reverseDns: row?.reverseDns ?? 0, formEmail: row?.formEmail ?? 0, organizations: row?.organizations ?? 0 };
    if (d) {
      const created = d.createdAt.toISOString();
      return { organizationName: d.organizationName, organizationDomain: d.organizationDomain, source: "declared", confidence: 1, attributed: true, guard: null, prefix: d.cidr, shared: row?.shared ?? false, firstSeenAt: created, lastSeenAt: created, expiresAt: null, evidence };
    }
    if (!row) return null;
    const guard = row.guard ?? (attributes(row) ? networkGuard(networkType, row.source) : null);
    const attributed = attributes(row) && !guard;
    return {
      organizationName: guard ? null : row.organizationName,
      organizationDomain: guard ? null : row.organizationDomain,
      source: guard ? null : row.source,
      confidence: attributed ? row.confidence : 0,
      attributed,
      guard,
      prefix: row.prefix,
      shared: row.shared,
      firstSeenAt: row.firstSeenAt.toISOString(),
      lastSeenAt: row.lastSeenAt.toISOString(),
      expiresAt: row.expiresAt.toISOString(),
      evidence,
    };
  }

  /** Records forms' business e-mail domains as evidence of their addresses, a free-mail address as a person's presence (operator domains, mobile and lead networks: nothing). */
  async recordFormEvidence(forms: readonly FormEvidence[]): Promise<void> {
    const wanted = forms.filter(learnsFrom);
    if (!wanted.length) return;
    const key = await this.keyOf(this.db);
    const rows = wanted.flatMap((form): NewEvidence[] => {
      const keys = addressKeys(form.ip);
      const domain = businessEmailDomain(form.email);
      const contributor = contributorKey(key, form.email);
      // a free-mail address, or a mailbox at a network operator's domain (a subscriber's, or an
      // operator employee's on the operator's own network): a person is there, not an office (the consumer guard of rules.ts)
      if (keys && (domain ? isOperatorDomain(domain) : isFreeMail(form.email))) return [{ scope: form.accountId, range: keys.range, unit: keys.unit, kind: "free_mail", domain: "", contributor, at: this.seenAt(form.at) }];
      if (!keys || !domain || sameDomain(domain, form.networkDomain)) return [];
      return [{ scope: form.accountId, range: keys.range, unit: keys.unit, kind: "form_email", domain, contributor, at: this.seenAt(form.at) }];
    });
    await this.store(deduplicated(rows));
  }

  /**
   * Records people seen at addresses (their visitor came from there) as their e-mail's evidence
   * at those addresses, for people who already left form evidence in the account (sent from a
   * shared network): a person at several addresses (a re-dialled line, carrier-grade NAT) then
   * holds none of them by e-mail alone (the moving_person guard). Someone known only from a
   * lead network's form is not placed anywhere by their visits.
   */
  async recordPresence(seen: readonly FormEvidence[]): Promise<void> {
    const wanted = seen.filter(learnsFrom);
    if (!wanted.length) return;
    const key = await this.keyOf(this.db);
    const people = [...new Set(wanted.map((s) => contributorKey(key, s.email)))];
    const known = new Set(
      (await this.db.$queryRaw<{ contributor: string; scope: string }[]>`
        SELECT DISTINCT contributor, scope FROM "IdentityEvidence" WHERE kind = 'form_email' AND contributor = ANY(${people}::text[])`).map((r) => `${r.scope} ${r.contributor}`),
    );
    await this.recordFormEvidence(wanted.filter((s) => known.has(`${s.accountId} ${contributorKey(key, s.email)}`)));
  }

  /**
   * Records PTR names as evidence: the registrable domain of a name that is not an access line
   * and not the operator's own, or the mark of a dynamic access line, or else of a business line
   * (rules.ts: one person's e-mail names such a line); other names (a static line's generic
   * name) are no evidence. Pooled when TRACKING_IDENTITY_POOL_REVERSE_DNS is on.
   */
  async recordPtrEvidence(answers: readonly PtrEvidence[]): Promise<void> {
    const rows = answers.flatMap((answer): NewEvidence[] => {
      const scope = this.ptrScope(answer.accountId);
      const keys = addressKeys(answer.ip);
      if (!scope || !keys || !answer.host || !learnsFrom(answer)) return [];
      const domain = domainOfPtr(answer.host, answer.ip);
      const evidence = { scope, range: keys.range, unit: keys.unit, contributor: "", at: this.seenAt(answer.at) };
      if (domain) return sameDomain(domain, answer.networkDomain) ? [] : [{ ...evidence, kind: "reverse_dns", domain }];
      if (readsLikeDynamicLine(answer.host)) return [{ ...evidence, kind: "dynamic_line", domain: "" }];
      return readsLikeBusinessLine(answer.host) ? [{ ...evidence, kind: "business_line", domain: "" }] : [];
    });
    const nowMs = this.now().getTime();
    for (const row of rows) if (row.kind === "reverse_dns" || row.kind === "business_line") this.ptrNamed.set(row.unit, true, nowMs + this.windowMs);
    await this.store(deduplicated(rows));
  }

  /**
   * Counts when visitors were seen at addresses named by a PTR domain or marked as business lines
   * (AddressActivity, over every account's traffic; the addresses this process recorded such a
   * name of); where an address has just shown itself used around the clock (rules.ts
   * AROUND_THE_CLOCK), recomputes every account's ranges bearing its PTR domains and every
   * account's range holding it: a hotel under its own brand, or on a business line, names nobody
   * from then on, and what it named is withdrawn (pending.ts takes the recomputed ranges).
   */
  async recordActivity(seen: readonly SeenAt[]): Promise<void> {
    const at = this.now();
    // the rule weighs named lines only: most shared-network traffic (households, CGNAT) has no such name, and costs nothing here
    const visits = seen.flatMap((address) => {
      const keys = learnsFrom(address) ? addressKeys(address.ip) : undefined;
      if (!keys || !this.ptrNamed.get(keys.unit, at.getTime())) return [];
      return address.visitorHours.map(({ visitorId, at }) => ({ unit: keys.unit, visitorId, at }));
    });
    if (!visits.length) return;
    const found = await this.activity.record(visits, at, this.since(at));
    if (found.length) await this.recomputeAll([...(await this.rangesBearingPtrDomainsOf(this.db, found)), ...(await this.rangesHolding(this.db, found))]);
  }

  /**
   * Asks reverse DNS of these addresses and records the answers (recordPtrEvidence): an address
   * is asked at most once per TRACKING_DNS_CACHE_SECONDS by this process (a failure again after
   * 5 minutes), and an answer is recorded at most once per scope in that time; an IPv6 address
   * without a name of its own takes its site gateway's (unitPtr). How many units were asked.
   */
  async learnReverseDns(addresses: readonly Omit<PtrEvidence, "host">[]): Promise<number> {
    if (!this.reverseDns.enabled) return 0;
    const at = this.now().getTime();
    const due = new Map<string, Omit<PtrEvidence, "host">>();
    for (const address of addresses) {
      const keys = learnsFrom(address) ? addressKeys(address.ip) : undefined;
      const scope = this.ptrScope(address.accountId);
      if (keys && scope && !this.recorded.get(rangeKey(scope, keys.unit), at)) due.set(rangeKey(scope, keys.unit), address);
    }
    const toAsk = [...new Set([...due.values()].map((a) => addressKeys(a.ip)!.unit))].filter((unit) => !this.ptrAnswers.get(unit, at));
    const ipOfUnit = new Map([...due.values()].map((a) => [addressKeys(a.ip)!.unit, a.ip] as const));
    for (let i = 0; i < toAsk.length; i += PARALLEL_LOOKUPS) {
      await Promise.all(
        toAsk.slice(i, i + PARALLEL_LOOKUPS).map(async (unit) => {
          const answer = await this.unitPtr(ipOfUnit.get(unit)!, at);
          this.ptrAnswers.set(unit, { host: answer?.host ?? null, keepMs: this.keepOf(answer) }, at + this.keepOf(answer));
        }),
      );
    }
    const answered = [...due].flatMap(([key, address]) => {
      const answer = this.ptrAnswers.get(addressKeys(address.ip)!.unit, at);
      if (!answer) return [];
      this.recorded.set(key, true, at + answer.keepMs);
      return [{ ...address, host: answer.host }];
    });
    await this.recordPtrEvidence(answered);
    this.logger?.debug("identity reverse DNS learned", { asked: toAsk.length, recorded: answered.length });
    return toAsk.length;
  }

  /** The keyed hashes that stand for these e-mail addresses in evidence (what eraseContributor takes). */
  async contributorKeys(emails: readonly string[], client: Client = this.db): Promise<string[]> {
    const key = await this.keyOf(client);
    return emails.map((email) => contributorKey(key, email));
  }

  /**
   * Removes the contribution of people (their keyed hashes) to the account's identities and
   * recomputes what it changes (its ranges, and other accounts' units its forms made shared): in
   * the caller's transaction when given (an erasure's), else in one of its own. How many pieces of
   * evidence were removed.
   */
  async eraseContributor(accountId: string, keys: readonly string[], tx?: Tx): Promise<number> {
    if (!keys.length) return 0;
    const run = async (t: Tx) => {
      const removed = await t.$queryRaw<{ range: string; unit: string; kind: EvidenceKind }[]>`
        DELETE FROM "IdentityEvidence" WHERE scope = ${accountId} AND contributor = ANY(${[...keys]}::text[]) RETURNING "range", unit, kind::text AS kind`;
      const own = removed.map(({ range, unit, kind }) => ({ scope: accountId, range, unit, kind }));
      // what those forms took away elsewhere comes back at once
      await this.recomputeAll([...own, ...(await this.affectedByRemoval(t, own))], t);
      return removed.length;
    };
    return tx ? run(tx) : this.db.$transaction(run);
  }

  /**
   * Retention: deletes evidence not seen within TRACKING_IDENTITY_DAYS (in batches) and the
   * identities past their expiresAt, and recomputes the ranges that lost evidence (a shared
   * address whose other organisation lapsed attributes again). Counts of what was deleted.
   */
  async expire(batchSize = 5_000): Promise<{ evidence: number; identities: number }> {
    const at = this.now();
    const affected: { scope: string; range: string }[] = [];
    let evidence = 0;
    for (;;) {
      const removed = await this.db.$queryRaw<{ scope: string; range: string; unit: string; kind: EvidenceKind }[]>`
        DELETE FROM "IdentityEvidence" WHERE id IN (SELECT id FROM "IdentityEvidence" WHERE "lastSeenAt" <= ${this.since(at)} LIMIT ${batchSize})
        RETURNING scope, "range", unit, kind::text AS kind`;
      affected.push(...removed, ...(await this.affectedByRemoval(this.db, removed)));
      evidence += removed.length;
      if (removed.length < batchSize) break;
    }
    await this.activity.expire(this.since(at));
    const identities = await this.db.$executeRaw`DELETE FROM "NetworkIdentity" WHERE "expiresAt" <= ${at}`;
    await this.recomputeAll(affected);
    return { evidence, identities };
  }

  /** The scopes an account's look-ups read, its own first. */
  private scopesOf(accountId: string): string[] {
    return this.pooled ? [accountId, POOL] : [accountId];
  }

  /** Where PTR evidence goes: the pool, or the account whose visitor brought it. */
  private ptrScope(accountId: string | undefined): string | undefined {
    return this.pooled ? POOL : accountId;
  }

  /** The start of the evidence window that ends at `at` (TRACKING_IDENTITY_DAYS). */
  private since(at: Date): Date {
    return new Date(at.getTime() - this.windowMs);
  }

  /** The deployment's hash key (ErasureKey, made on first use). */
  private async keyOf(client: Client): Promise<string> {
    if (this.hashKey) return this.hashKey;
    return (this.hashKey = await erasureKeyOf(client));
  }

  /** Runs `work` holding the range's lock: in the caller's transaction when given, else in one of its own. */
  private async inRange<T>(caller: Tx | undefined, scope: string, range: string, work: (tx: Tx) => Promise<T>): Promise<T> {
    const locked = async (tx: Tx) => {
      await tx.$executeRaw`SELECT pg_advisory_xact_lock(${RANGE_LOCK}::int, hashtext(${rangeKey(scope, range)}))`;
      return work(tx);
    };
    return caller ? locked(caller) : this.db.$transaction(locked);
  }

  /**
   * Of these domains, the network operators' own learned from PTR statistics of every scope (the
   * curated ones, operator-domains.ts, are the rules' own): the PTR domain of
   * TRACKING_DNS_OPERATOR_PREFIXES ranges or more, or of OPERATOR_UNITS addresses or more over
   * two ranges or more (rules.ts).
   */
  private async operatorDomains(tx: Client, domains: readonly string[]): Promise<Set<string>> {
    if (!domains.length) return new Set();
    const rows = await tx.$queryRaw<{ domain: string }[]>`
      SELECT d AS domain FROM unnest(${domains}::text[]) AS d
      WHERE (SELECT count(*) FROM (SELECT e."range" FROM "IdentityEvidence" e WHERE e.kind = 'reverse_dns' AND e.domain = d
                                   UNION SELECT r.prefix FROM "ReverseDnsEntry" r WHERE r.domain = d) AS ranges) >= ${this.reverseDns.operatorPrefixes}
        OR (SELECT count(DISTINCT e.unit) >= ${OPERATOR_UNITS.addresses} AND count(DISTINCT e."range") >= ${OPERATOR_UNITS.ranges}
            FROM "IdentityEvidence" e WHERE e.kind = 'reverse_dns' AND e.domain = d)`;
    return new Set(rows.map((r) => r.domain));
  }

  /** Of these people, those whose e-mail evidence lies at two or more units of the scope within the window. */
  private async movingPeople(tx: Tx, scope: string, people: readonly string[], at: Date): Promise<Set<string>> {
    if (!people.length) return new Set();
    const rows = await tx.$queryRaw<{ contributor: string }[]>`
      SELECT contributor FROM "IdentityEvidence"
      WHERE scope = ${scope} AND kind = 'form_email' AND contributor = ANY(${people}::text[]) AND "lastSeenAt" > ${this.since(at)}
      GROUP BY contributor HAVING count(DISTINCT unit) >= 2`;
    return new Set(rows.map((r) => r.contributor));
  }

  /**
   * Of these PTR domains, the hosts' by every account's evidence in every range (rules.ts
   * hostDomains): forms at the units bearing the domain, wherever they are, never name the domain,
   * and name other organisations (HOST_TENANTS) or come from people with free-mail addresses
   * (CONSUMERS). A dual-stack coworking space or hotel shows its people's forms on one family and
   * only its gateway's name on the other; its guests fill in forms on many partners' sites, few on
   * any one. Like an operator's domain, a host's is learned across accounts: the fact only takes a
   * name away (its units name nobody), never gives one, and shows no account's visitors to another.
   */
  private async hostDomainsOf(tx: Client, domains: readonly string[], at: Date): Promise<Set<string>> {
    if (!domains.length) return new Set();
    const rows = await tx.$queryRaw<{ domain: string }[]>`
      SELECT p.domain FROM "IdentityEvidence" p
        JOIN "IdentityEvidence" f ON f.unit = p.unit AND f.kind IN ('form_email', 'free_mail') AND f."lastSeenAt" > ${this.since(at)}
      WHERE p.kind = 'reverse_dns' AND p.domain = ANY(${domains}::text[]) AND p."lastSeenAt" > ${this.since(at)}
      GROUP BY p.domain
      HAVING bool_and(f.domain <> p.domain) AND (
        count(DISTINCT f.domain) FILTER (WHERE f.kind = 'form_email') >= ${HOST_TENANTS}
        OR count(DISTINCT f.contributor) FILTER (WHERE f.kind = 'free_mail') >= ${CONSUMERS})`;
    return new Set(rows.map((r) => r.domain));
  }

  /** Unit -> the organisations other scopes' forms name there within the window (rules.ts namedElsewhere), by the unit index. */
  private async otherOrganizations(tx: Client, scope: string, units: readonly string[], at: Date): Promise<Map<string, Set<string>>> {
    const byUnit = new Map<string, Set<string>>();
    if (!units.length) return byUnit;
    const rows = await tx.$queryRaw<{ unit: string; domain: string }[]>`
      SELECT DISTINCT unit, domain FROM "IdentityEvidence"
      WHERE unit = ANY(${units}::text[]) AND kind = 'form_email' AND scope <> ${scope} AND "lastSeenAt" > ${this.since(at)}`;
    for (const { unit, domain } of rows) byUnit.set(unit, (byUnit.get(unit) ?? new Set()).add(domain));
    return byUnit;
  }

  /** Recomputes the identity rows of one range of one scope from its evidence (the caller holds the range's lock). */
  private async recompute(tx: Tx, scope: string, range: string): Promise<void> {
    const at = this.now();
    const withPool = this.pooled && scope !== POOL;
    const evidence = await tx.$queryRaw<Evidence[]>`
      SELECT unit, kind::text AS kind, domain, contributor, "firstSeenAt", "lastSeenAt" FROM "IdentityEvidence"
      WHERE "range" = ${range} AND "lastSeenAt" > ${this.since(at)} AND (scope = ${scope} OR (${withPool}::boolean AND scope = ${POOL}))`;
    // only units this scope's forms name can be named by e-mail alone (what other scopes' forms may take away)
    const formUnits = [...new Set(evidence.filter((e) => e.kind === "form_email").map((e) => e.unit))];
    const otherOrganizations = await this.otherOrganizations(tx, scope, formUnits, at);
    const elsewhere = [...otherOrganizations.values()].flatMap((d) => [...d]);
    const domains = [...new Set([...evidence.map((e) => e.domain).filter(Boolean), ...elsewhere])];
    const people = [...new Set(evidence.map((e) => e.contributor).filter(Boolean))];
    const ptrDomains = [...new Set(evidence.filter((e) => e.kind === "reverse_dns").map((e) => e.domain))];
    const operatorDomains = await this.operatorDomains(tx, domains);
    const businessLines = [...new Set(evidence.filter((e) => e.kind === "business_line").map((e) => e.unit))];
    const rows = identitiesOfRange(evidence, {
      version: versionOfRange(range),
      otherOrganizations,
      operatorDomains,
      movingPeople: await this.movingPeople(tx, scope, people, at),
      hostDomains: await this.hostDomainsOf(tx, ptrDomains, at),
      aroundTheClock: await this.activity.domainsAroundTheClock(tx, ptrDomains.filter((d) => !operatorDomains.has(d) && !isOperatorDomain(d)), this.since(at)),
      linesAroundTheClock: await this.activity.unitsAroundTheClock(tx, businessLines, this.since(at)),
      windowMs: this.windowMs,
    });
    await tx.$executeRaw`DELETE FROM "NetworkIdentity" WHERE scope = ${scope} AND "range" = ${range}`;
    this.recomputed.set(rangeKey(scope, range), { scope, range });
    if (!rows.length) return;
    await tx.$executeRaw`
      INSERT INTO "NetworkIdentity" (scope, "accountId", prefix, "range", "organizationDomain", "organizationName", source, confidence, guard, shared,
        "reverseDns", "formEmail", organizations, "firstSeenAt", "lastSeenAt", "expiresAt")
      SELECT ${scope}, ${accountOf(scope)}, r.prefix, ${range}, r."organizationDomain", r."organizationName", r.source::"IdentitySource", r.confidence,
        r.guard::"IdentityGuard", r.shared, r."reverseDns", r."formEmail", r.organizations, r."firstSeenAt", r."lastSeenAt", r."expiresAt"
      FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS r(prefix text, "organizationDomain" text, "organizationName" text, source text,
        confidence float8, guard text, shared boolean, "reverseDns" int, "formEmail" int, organizations int,
        "firstSeenAt" timestamptz, "lastSeenAt" timestamptz, "expiresAt" timestamptz)`;
  }

  /** Recomputes each (scope, range) once, in key order (the lock order): in the caller's transaction when given, else each in its own. */
  private async recomputeAll(pairs: Iterable<RangePair>, caller?: Tx): Promise<void> {
    const unique = new Map([...pairs].map(({ scope, range }) => [rangeKey(scope, range), { scope, range }] as const));
    for (const key of [...unique.keys()].sort()) {
      const { scope, range } = unique.get(key)!;
      await this.inRange(caller, scope, range, (tx) => this.recompute(tx, scope, range));
    }
  }

  private async hasIdentities(tx: Tx, scope: string, range: string): Promise<boolean> {
    const [row] = await tx.$queryRaw<unknown[]>`SELECT 1 FROM "NetworkIdentity" WHERE scope = ${scope} AND "range" = ${range} LIMIT 1`;
    return row !== undefined;
  }

  /** Inserts evidence, or renews the rows it matches (first and last seen widened); the rows that are new. */
  private async upsert(tx: Tx, rows: readonly NewEvidence[]): Promise<NewEvidence[]> {
    // xmax is 0 on a row this statement inserted, the updating transaction's id on one it renewed
    const inserted = await tx.$queryRaw<{ key: string; fresh: boolean }[]>`
      INSERT INTO "IdentityEvidence" (scope, "accountId", "range", unit, kind, domain, contributor, "firstSeenAt", "lastSeenAt")
      SELECT r.scope, nullif(r.scope, ${POOL}), r."range", r.unit, r.kind::"IdentityEvidenceKind", r.domain, r.contributor, r.at, r.at
      FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS r(scope text, "range" text, unit text, kind text, domain text, contributor text, at timestamptz)
      ON CONFLICT (scope, unit, kind, domain, contributor) DO UPDATE SET
        "firstSeenAt" = least("IdentityEvidence"."firstSeenAt", EXCLUDED."firstSeenAt"),
        "lastSeenAt" = greatest("IdentityEvidence"."lastSeenAt", EXCLUDED."lastSeenAt")
      RETURNING concat_ws(${"\n"}, scope, unit, kind::text, domain, contributor) AS key, xmax::text = '0' AS fresh`;
    const fresh = new Set(inserted.filter((r) => r.fresh).map((r) => r.key));
    return rows.filter((r) => fresh.has(evidenceKey(r)));
  }

  /**
   * What else new evidence changes: the ranges where the same people left evidence (they may now
   * be moving), every account's rows of a range whose pooled PTR evidence changed, the rows
   * naming a PTR domain that has become a network operator's, and the other ranges bearing the PTR
   * domain of a unit with new evidence, with every account's rows naming it where the evidence is
   * a form (it may have become a host's: hostDomainsOf; not an operator's domain, which names
   * nobody anywhere and would recompute its many ranges), and other accounts' ranges with evidence
   * at the units of new forms (rangesSharingUnits). `ofPeople`: the first (the same scope's);
   * `ofOthers`: the rest, which another scope's evidence may change.
   */
  private async affectedElsewhere(rows: readonly NewEvidence[]): Promise<{ ofPeople: RangePair[]; ofOthers: RangePair[] }> {
    const people = rows.filter((r) => r.contributor).map((r) => ({ scope: r.scope, contributor: r.contributor }));
    const pooledRanges = [...new Set(rows.filter((r) => r.scope === POOL).map((r) => r.range))];
    const ptrDomains = [...new Set(rows.filter((r) => r.kind === "reverse_dns").map((r) => r.domain))];
    const telling: readonly EvidenceKind[] = ["form_email", "free_mail", "reverse_dns"];
    const named = rows.filter((r) => r.scope !== POOL && telling.includes(r.kind)).map((r) => ({ scope: r.scope, unit: r.unit, form: r.kind !== "reverse_dns" }));
    // the PTR domains at the units of new evidence (any account's names of them): a host's brand learned here is one in its other ranges too
    const unitDomains = named.length
      ? await this.db.$queryRaw<{ scope: string; domain: string; form: boolean }[]>`
          SELECT DISTINCT n.scope, p.domain, n.form FROM jsonb_to_recordset(${JSON.stringify(named)}::jsonb) AS n(scope text, unit text, form boolean)
            JOIN "IdentityEvidence" p ON p.unit = n.unit AND p.kind = 'reverse_dns'`
      : [];
    const operators = await this.operatorDomains(this.db, [...new Set([...ptrDomains, ...unitDomains.map((d) => d.domain)])]);
    // an operator's domain names nobody anywhere: its many ranges need no recomputation for it
    const hostCandidates = unitDomains.filter((d) => !operators.has(d.domain));
    const forms = rows.filter((r) => r.kind === "form_email").map(({ scope, unit }) => ({ scope, unit }));
    const elsewhere = await this.rangesSharingUnits(this.db, forms);
    const ofPeople = await this.db.$queryRaw<RangePair[]>`
      SELECT DISTINCT e.scope, e."range" FROM "IdentityEvidence" e
        JOIN jsonb_to_recordset(${JSON.stringify(people)}::jsonb) AS p(scope text, contributor text) ON e.scope = p.scope AND e.contributor = p.contributor`;
    const related = await this.db.$queryRaw<RangePair[]>`
      SELECT DISTINCT scope, "range" FROM "IdentityEvidence" WHERE "range" = ANY(${pooledRanges}::text[])
      UNION SELECT DISTINCT scope, "range" FROM "NetworkIdentity" WHERE "organizationDomain" = ANY(${[...operators]}::text[])
      UNION SELECT DISTINCT c.scope, e."range" FROM jsonb_to_recordset(${JSON.stringify(hostCandidates)}::jsonb) AS c(scope text, domain text)
        JOIN "IdentityEvidence" e ON e.kind = 'reverse_dns' AND e.domain = c.domain AND e.scope IN (c.scope, ${POOL})
      UNION SELECT DISTINCT scope, "range" FROM "NetworkIdentity" WHERE "organizationDomain" = ANY(${[...new Set(hostCandidates.filter((c) => c.form).map((c) => c.domain))]}::text[])`;
    return { ofPeople, ofOthers: [...related, ...elsewhere] };
  }

  /**
   * What forms removed (erased, expired) had taken away elsewhere: other scopes' ranges with
   * evidence at their units (namedElsewhere), and every scope's ranges bearing a PTR domain of
   * their units, which may be no host's any more (hostDomainsOf; an operator's domain names nobody
   * anyway, and its many ranges are left alone).
   */
  private async affectedByRemoval(client: Client, removed: readonly { scope: string; unit: string; kind: EvidenceKind }[]): Promise<RangePair[]> {
    const forms = removed.filter((r) => r.kind === "form_email" || r.kind === "free_mail");
    if (!forms.length) return [];
    const bearing = await this.rangesBearingPtrDomainsOf(client, [...new Set(forms.map((f) => f.unit))]);
    return [...(await this.rangesSharingUnits(client, forms)), ...bearing];
  }

  /**
   * Every scope's ranges bearing a PTR domain of these units, which a fact of the units (forms
   * gone, visits around the clock) may have made a host's or no host's any more; an operator's
   * domain names nobody anyway, and its many ranges are left alone.
   */
  private async rangesBearingPtrDomainsOf(client: Client, units: readonly string[]): Promise<RangePair[]> {
    const ptrDomains = (
      await client.$queryRaw<{ domain: string }[]>`SELECT DISTINCT domain FROM "IdentityEvidence" WHERE unit = ANY(${units}::text[]) AND kind = 'reverse_dns'`
    ).map((r) => r.domain);
    const operators = await this.operatorDomains(client, ptrDomains);
    const hosts = ptrDomains.filter((d) => !operators.has(d) && !isOperatorDomain(d));
    return client.$queryRaw<RangePair[]>`SELECT DISTINCT scope, "range" FROM "IdentityEvidence" WHERE kind = 'reverse_dns' AND domain = ANY(${hosts}::text[])`;
  }

  /** Every scope's ranges with evidence at these units. */
  private rangesHolding(client: Client, units: readonly string[]): Promise<RangePair[]> {
    return client.$queryRaw<RangePair[]>`SELECT DISTINCT scope, "range" FROM "IdentityEvidence" WHERE unit = ANY(${units}::text[])`;
  }

  /** Other scopes' ranges with evidence at the units where these scopes' forms came or went: what other accounts' forms name there changed (rules.ts namedElsewhere). */
  private async rangesSharingUnits(client: Client, forms: readonly { scope: string; unit: string }[]): Promise<RangePair[]> {
    if (!forms.length) return [];
    return client.$queryRaw<RangePair[]>`
      SELECT DISTINCT e.scope, e."range" FROM jsonb_to_recordset(${JSON.stringify(forms)}::jsonb) AS f(scope text, unit text)
        JOIN "IdentityEvidence" e ON e.unit = f.unit AND e.scope <> f.scope`;
  }

  /** Stores evidence and recomputes what it changes: its ranges (each in one transaction with its evidence), then the others. */
  private async store(rows: readonly NewEvidence[]): Promise<void> {
    const byRange = new Map<string, NewEvidence[]>();
    for (const row of rows) {
      const key = rangeKey(row.scope, row.range);
      byRange.set(key, [...(byRange.get(key) ?? []), row]);
    }
    const keys = [...byRange.keys()].sort();
    const fresh: NewEvidence[] = [];
    for (const key of keys) {
      const group = byRange.get(key)!;
      const { scope, range } = group[0]!;
      await this.inRange(undefined, scope, range, async (tx) => {
        fresh.push(...(await this.upsert(tx, group)));
        // dynamic-line and free-mail marks alone change nothing in a range without identities (most
        // consumers' lines): the range's next recomputation, under this lock, reads them
        if (group.some((r) => r.kind !== "dynamic_line" && r.kind !== "free_mail") || (await this.hasIdentities(tx, scope, range))) await this.recompute(tx, scope, range);
      });
    }
    // evidence seen again changes nothing beyond its range (no new person, unit or organisation anywhere)
    if (!fresh.length) return;
    const { ofPeople, ofOthers } = await this.affectedElsewhere(fresh);
    const done = (p: RangePair) => byRange.has(rangeKey(p.scope, p.range));
    // a range recomputed above before another scope's new evidence of this call was stored (the keys' order) is recomputed again
    const lastScope = fresh.map((r) => r.scope).sort().at(-1)!;
    await this.recomputeAll([...ofPeople.filter((p) => !done(p)), ...ofOthers.filter((p) => !done(p) || p.scope < lastScope)]);
  }

  /** How long an answer is kept: the cache time, a failed look-up's retry delay at most. */
  private keepOf(answer: { host: string | null } | undefined): number {
    return answer ? this.reverseDns.cacheSeconds * 1000 : Math.min(FAILURE_RETRY_MS, this.reverseDns.cacheSeconds * 1000);
  }

  /**
   * The PTR answer that names an address's unit: its own name; for IPv6, where hosts' privacy
   * addresses have none, the name of its site's gateway when its own has none: ::1 of the /64
   * (its LAN's router), then ::1 of the /48 (the site's), the latter asked once per /48 and
   * cache time. Undefined: the address's own look-up failed and no gateway named it.
   */
  private async unitPtr(ip: string, at: number): Promise<{ host: string | null } | undefined> {
    const own = await lookUpPtr(this.reverseDns, ip);
    const keys = addressKeys(ip)!;
    if (keys.version === 4 || own?.host) return own;
    const lan = await lookUpPtr(this.reverseDns, gatewayOf(keys.unit));
    if (lan?.host) return lan;
    // the look-up itself is remembered, so that the /64s of one site asked at once share it
    let site = this.siteAnswers.get(keys.range, at);
    if (!site) {
      const asked = lookUpPtr(this.reverseDns, gatewayOf(keys.range)).then((answer) => {
        this.siteAnswers.set(keys.range, asked, at + this.keepOf(answer));
        return answer?.host ?? null;
      });
      this.siteAnswers.set(keys.range, (site = asked), at + this.keepOf(undefined));
    }
    const host = await site;
    return host ? { host } : own;
  }

  /** Evidence times are never in the future. */
  private seenAt(at: Date | undefined): Date {
    return new Date(Math.min((at ?? this.now()).getTime(), this.now().getTime()));
  }

  /**
   * The stored rows holding each address (its unit's, its prefixes'), by query index: one
   * statement, by each address's range and then containment. A masked address matches only a
   * row of its whole range.
   */
  private async storedRows(queries: readonly AddressQuery[], client: Client = this.db): Promise<Map<number, StoredRow[]>> {
    const candidates = queries.flatMap((q, i) => {
      const keys = LEARNING.has(q.networkType) ? addressKeys(q.ip) : undefined;
      return keys ? this.scopesOf(q.accountId).map((scope) => ({ i, scope, range: keys.range, unit: keys.unit, masked: !!q.masked })) : [];
    });
    const byQuery = new Map<number, StoredRow[]>();
    if (!candidates.length) return byQuery;
    const rows = await client.$queryRaw<(StoredRow & { i: number })[]>`
      SELECT c.i, n.scope, n.prefix, n."organizationDomain", n."organizationName", n.source::text AS source, n.confidence, n.guard::text AS guard,
        n.shared, n."reverseDns", n."formEmail", n.organizations, n."firstSeenAt", n."lastSeenAt", n."expiresAt"
      FROM jsonb_to_recordset(${JSON.stringify(candidates)}::jsonb) AS c(i int, scope text, "range" text, unit text, masked boolean)
        JOIN "NetworkIdentity" n ON n.scope = c.scope AND n."range" = c."range"
      WHERE n."expiresAt" > ${this.now()} AND CASE WHEN c.masked THEN n.prefix = c."range" ELSE n.prefix::inet >>= c.unit::inet END`;
    for (const row of rows) byQuery.set(row.i, [...(byQuery.get(row.i) ?? []), row]);
    return byQuery;
  }

  /** The most specific declared network of the account holding each address (a masked one: its whole range), by query index: one statement. */
  private async declaredOf(queries: readonly AddressQuery[], client: Client = this.db): Promise<Map<number, { cidr: string; organizationName: string; organizationDomain: string | null; createdAt: Date; holding: number }>> {
    const wanted = queries.flatMap((q, i) => {
      const keys = addressKeys(q.ip);
      return keys ? [{ i, accountId: q.accountId, network: q.masked ? keys.range : keys.unit }] : [];
    });
    if (!wanted.length) return new Map();
    const rows = await client.$queryRaw<{ i: number; cidr: string; organizationName: string; organizationDomain: string | null; createdAt: Date; holding: bigint }[]>`
      SELECT DISTINCT ON (w.i) w.i, text(d.network) AS cidr, d."organizationName", d."organizationDomain", d."createdAt",
        count(*) OVER (PARTITION BY w.i) AS holding
      FROM jsonb_to_recordset(${JSON.stringify(wanted)}::jsonb) AS w(i int, "accountId" text, network text)
        JOIN "DeclaredNetwork" d ON d."accountId" = w."accountId" AND d.network >>= w.network::inet
      ORDER BY w.i, masklen(d.network) DESC`;
    return new Map(rows.map((r) => [r.i, { ...r, holding: Number(r.holding) }]));
  }
}
