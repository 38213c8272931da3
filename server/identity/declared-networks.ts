// Networks an account declares as an organisation's (the spec's Declared Networks): the only code
// that writes DeclaredNetwork. A declaration is read at look-up time by containment, the most
// specific first (identities.ts), so adding or removing one needs no recomputation.
import { parse as parseHost } from "tldts";
import { Prisma } from "../../generated/prisma/client.ts";
import type { Db } from "../db/database.ts";
import { Conflict, Invalid, NotFound } from "../domain/errors.ts";
import { newId } from "../ids.ts";
import { registrableDomain } from "./domain-names.ts";
import { declaredNetwork, rangesOf } from "./addresses.ts";
import { POOL } from "./identities.ts";

/** Declarations an account may hold (the look-ups of a batch compare each address with them). */
export const MAX_DECLARED_NETWORKS = 10_000;

/**
 * Advisory-lock namespace of an account's declarations ("dnet"; the second key is a hash of the
 * account id): declarations of one account are counted and inserted one at a time, so that
 * concurrent requests cannot each see 9,999 and together exceed the maximum.
 */
const DECLARATIONS_LOCK = 0x646e6574;

export interface DeclareNetworkInput {
  cidr: string;
  organizationName: string;
  organizationDomain?: string;
}

/** A declaration as stored: the network canonical, the domain normalised. */
export interface Declaration {
  cidr: string;
  organizationName: string;
  organizationDomain: string | null;
}

/** Evidence from a declared network's addresses that disagrees with the declaration (the spec's DeclarationConflicts). */
export interface DeclarationConflicts {
  dynamicLineNames: number;
  otherOrganizations: number;
  freeMailPeople: number;
}

export interface DeclaredNetworkRecord {
  id: string;
  cidr: string;
  organizationName: string;
  organizationDomain: string | null;
  createdAt: Date;
  conflicts: DeclarationConflicts;
}

/**
 * The stored form of a declared domain (lower case, no trailing dot or leading www.), or 400: a
 * host name under a public suffix of the Public Suffix List's ICANN section (an unknown ending
 * such as `invalidtldxyz` is not one, though tldts's default rule treats it as a suffix).
 */
function declaredDomain(text: string): string {
  const domain = text.trim().toLowerCase().replace(/\.$/, "").replace(/^www\./, "");
  if (!registrableDomain(domain) || !parseHost(domain, { allowPrivateDomains: false }).isIcann) {
    throw new Invalid("organizationDomain is not a domain", [{ location: "body", field: "organizationDomain", message: "must be a host name under a public suffix, such as example.de" }]);
  }
  return domain;
}

/** The canonical network of the request, or 400 naming what is wrong. */
function canonicalCidr(text: string): string {
  const network = declaredNetwork(text.trim());
  if ("problem" in network) throw new Invalid("cidr is not a network that can be declared", [{ location: "body", field: "cidr", message: network.problem }]);
  return network.cidr;
}

/** A listing cursor's position: (createdAt in ms, id) of the page's last item. */
export function readDeclaredPosition(value: unknown): { t: number; id: string } | undefined {
  const { t, id } = (value ?? {}) as { t?: unknown; id?: unknown };
  return Number.isSafeInteger(t) && typeof id === "string" && id ? { t: t as number, id } : undefined;
}

/** The declaration a request asks for, checked (400 naming the field) and normalised. */
export function declarationOf(input: DeclareNetworkInput): Declaration {
  return {
    cidr: canonicalCidr(input.cidr),
    organizationName: input.organizationName.trim(),
    organizationDomain: input.organizationDomain === undefined ? null : declaredDomain(input.organizationDomain),
  };
}

export function declaredNetworks(db: Db) {
  return {
    /**
     * Declares the network; 409 when the account declared it already or holds the most it may.
     * The account's lock, then the count and the insert as one statement: the statement's
     * snapshot is taken after the lock, so it counts every declaration committed before it.
     */
    async declare(accountId: string, { cidr, organizationName, organizationDomain }: Declaration): Promise<string> {
      const id = newId("dnet");
      const [, inserted] = await db.$transaction([
        db.$executeRaw`SELECT pg_advisory_xact_lock(${DECLARATIONS_LOCK}::int, hashtext(${accountId}))`,
        db.$queryRaw<{ id: string }[]>`
          INSERT INTO "DeclaredNetwork" (id, "accountId", network, "organizationName", "organizationDomain")
          SELECT ${id}, ${accountId}, ${cidr}::inet, ${organizationName}, ${organizationDomain}
          WHERE (SELECT count(*) FROM "DeclaredNetwork" WHERE "accountId" = ${accountId}) < ${MAX_DECLARED_NETWORKS}
          ON CONFLICT ("accountId", network) DO NOTHING
          RETURNING id`,
      ]);
      if (inserted.length) return id;
      const [existing] = await db.$queryRaw<unknown[]>`SELECT 1 FROM "DeclaredNetwork" WHERE "accountId" = ${accountId} AND network = ${cidr}::inet`;
      throw new Conflict(existing ? `The network ${cidr} is already declared in this account` : `The account already holds ${MAX_DECLARED_NETWORKS} declared networks`);
    },

    /**
     * A page of the account's declarations, oldest first, after `after`, each with its conflicts:
     * the account's evidence from its addresses (and pooled PTR names: public) that disagrees.
     * The evidence is found by its scope and range (an index) and compared by containment, so a
     * page costs the evidence of its declarations' ranges, not the account's (conflictsOf).
     */
    async list(accountId: string, limit: number, after?: { t: number; id: string }): Promise<DeclaredNetworkRecord[]> {
      const position = after ? Prisma.sql`AND ("createdAt", id) > (${new Date(after.t)}, ${after.id})` : Prisma.empty;
      const page = await db.$queryRaw<Omit<DeclaredNetworkRecord, "conflicts">[]>`
        SELECT id, text(network) AS cidr, "organizationName", "organizationDomain", "createdAt" FROM "DeclaredNetwork"
        WHERE "accountId" = ${accountId} ${position} ORDER BY "createdAt", id LIMIT ${limit}`;
      const conflicts = await conflictsOf(db, accountId, page);
      return page.map((row) => ({ ...row, conflicts: conflicts.get(row.id) ?? { dynamicLineNames: 0, otherOrganizations: 0, freeMailPeople: 0 } }));
    },

    /** Removes a declaration of the account; 404 for an unknown id (another account's included). Its CIDR (what it attributed is withdrawn). */
    async remove(accountId: string, networkId: string): Promise<string> {
      const [removed] = await db.$queryRaw<{ cidr: string }[]>`DELETE FROM "DeclaredNetwork" WHERE "accountId" = ${accountId} AND id = ${networkId} RETURNING text(network) AS cidr`;
      if (!removed) throw new NotFound(`No declared network ${networkId} in this account`);
      return removed.cidr;
    },
  };
}

export type DeclaredNetworks = ReturnType<typeof declaredNetworks>;

/** The counts of DeclarationConflicts over the evidence rows `e` of declaration `d`. */
const CONFLICT_COUNTS = Prisma.sql`
  count(DISTINCT e.unit) FILTER (WHERE e.kind = 'dynamic_line')::int AS "dynamicLineNames",
  count(DISTINCT e.domain) FILTER (WHERE e.kind = 'form_email' AND e.scope = d."accountId"
    AND (d."organizationDomain" IS NULL OR (e.domain <> d."organizationDomain" AND d."organizationDomain" NOT LIKE '%.' || e.domain)))::int AS "otherOrganizations",
  count(DISTINCT e.contributor) FILTER (WHERE e.kind = 'free_mail' AND e.scope = d."accountId")::int AS "freeMailPeople"`;

/**
 * The conflicts of these declarations of the account, by id (none: no disagreeing evidence). The
 * evidence of a declaration's ranges (rangesOf) is read by the (scope, range) index; a declaration
 * covering more ranges than rangesOf lists is compared with every evidence row of the account.
 */
async function conflictsOf(db: Db, accountId: string, page: readonly { id: string; cidr: string }[]): Promise<Map<string, DeclarationConflicts>> {
  const covered = page.map((d) => ({ id: d.id, ranges: rangesOf(d.cidr) }));
  const pairs = covered.flatMap((d) => (d.ranges ?? []).map((range) => ({ id: d.id, range })));
  const wide = covered.filter((d) => !d.ranges).map((d) => d.id);
  const scopes = Prisma.sql`e.scope IN (${accountId}, ${POOL})`;
  const [byRange, byScope] = await Promise.all([
    pairs.length
      ? db.$queryRaw<({ id: string } & DeclarationConflicts)[]>`
          SELECT d.id, ${CONFLICT_COUNTS}
          FROM unnest(${pairs.map((p) => p.id)}::text[], ${pairs.map((p) => p.range)}::text[]) AS p(id, range)
          JOIN "DeclaredNetwork" d ON d.id = p.id AND d."accountId" = ${accountId}
          JOIN "IdentityEvidence" e ON ${scopes} AND e.range = p.range AND e.unit::inet <<= d.network
          GROUP BY d.id`
      : [],
    wide.length
      ? db.$queryRaw<({ id: string } & DeclarationConflicts)[]>`
          SELECT d.id, ${CONFLICT_COUNTS}
          FROM "DeclaredNetwork" d JOIN "IdentityEvidence" e ON ${scopes} AND e.unit::inet <<= d.network
          WHERE d.id = ANY(${wide}::text[]) AND d."accountId" = ${accountId}
          GROUP BY d.id`
      : [],
  ]);
  return new Map([...byRange, ...byScope].map(({ id, ...conflicts }) => [id, conflicts]));
}
