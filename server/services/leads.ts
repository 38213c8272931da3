// Leads: the organisations that visited a dataset's website, their listing (filters, exclusion
// rules and keyset paging, all evaluated by the database) and the dataset exclusion rules.
import type { components } from "../../generated/openapi.ts";
import { type Lead, Prisma } from "../../generated/prisma/client.ts";
import type { QueryOf } from "../domain/types.ts";
import type { Db } from "../db/database.ts";
import { Conflict, NotFound } from "../domain/errors.ts";
import { EXCLUSION_TYPES, type ExclusionType, notExcluded, ruleKey } from "../domain/exclusions.ts";
import { insertLeads as storeLeads } from "../tracking/write/lead-store.ts";
import * as access from "./access.ts";
import { checkFilter, filterSql, type SegmentFilter } from "./lead-filter.ts";
import { scoreSql } from "./lead-score.ts";
import { decodeCursor, toPage } from "./paging.ts";
import * as segments from "./segments.ts";
import { normaliseTag } from "./tags.ts";

type Schemas = components["schemas"];
export type LeadDto = Schemas["LeadDTO"];
export type { ExclusionType };
export type ExclusionRule = Schemas["SaveDatasetExclusion"];
type ExclusionGroup = Schemas["DatasetTypeExclusionResponse"];

/** A lead as tracking reports it. */
export interface NewLead {
  leadId: string;
  organizationName: string;
  organizationDomain?: string | null;
  /** Where the domain comes from; `curated` when a domain is given without one. */
  domainSource?: LeadDto["domainSource"];
  /** How the organisation was recognised (default: its own network, confidence 1). */
  identitySource?: LeadDto["identitySource"];
  identityConfidence?: number;
  industry?: string | null;
  employeeCount?: number | null;
  country?: string | null;
  city?: string | null;
  firstVisitAt: Date;
  lastVisitAt: Date;
  visitCount?: number;
  tags?: string[];
  assigneeUserId?: number | null;
}

export type LeadQuery = Omit<QueryOf<"listLeads">, "filter"> & { filter?: SegmentFilter };

/** The `identitySource` query parameter as the filter condition it is. */
const identitySourceFilter = (source: LeadDto["identitySource"]): SegmentFilter => ({ match: "all", conditions: [{ field: "identitySource", operator: "eq", value: source }] });
export type LeadSort = NonNullable<QueryOf<"listLeads">["sort"]>;

/** Where a page ends in the listing's order: (lastVisitAt, leadId) or (score, leadId), descending. */
export type LeadPosition = { lastVisitAt: string; leadId: string } | { score: number; leadId: string };

export interface LeadListing {
  datasetId: string;
  filters: SegmentFilter[];
  after?: LeadPosition;
  limit: number;
  sort?: LeadSort;
}

/** The keyset condition of a position: after it in the listing's order. */
function afterSql(after: LeadPosition): Prisma.Sql {
  return "score" in after
    ? Prisma.sql`(${scoreSql}, l."id") < (${after.score}::int, ${after.leadId})`
    : Prisma.sql`(l."lastVisitAt", l."id") < (${after.lastVisitAt}::timestamptz, ${after.leadId})`;
}

/**
 * The listing's query: the dataset's leads that match every filter and no exclusion rule, after
 * the cursor's position, most recent visit first (the index (datasetId, lastVisitAt desc, id desc))
 * or highest score first (computed for every candidate). Also what bench/leads-plan.ts explains.
 */
export function leadListingSql({ datasetId, filters, after, limit, sort = "lastVisitAt" }: LeadListing): Prisma.Sql {
  const conditions = [Prisma.sql`l."datasetId" = ${datasetId}`, ...filters.map(filterSql), notExcluded, ...(after ? [afterSql(after)] : [])];
  const order = sort === "score" ? Prisma.sql`score DESC, l."id" DESC` : Prisma.sql`l."lastVisitAt" DESC, l."id" DESC`;
  return Prisma.sql`SELECT l."id", l."organizationName", l."organizationDomain", l."domainSource", l."industry", l."employeeCount",
      l."country", l."city", l."firstVisitAt", l."lastVisitAt", l."visitCount", l."tags", l."assigneeUserId",
      l."identitySource", l."identityConfidence", ${scoreSql} AS score
    FROM "Lead" l
    WHERE ${Prisma.join(conditions, " AND ")}
    ORDER BY ${order}
    LIMIT ${limit}`;
}

/** The columns the listing selects: the stored lead without its tenancy columns, and its score. */
type LeadRow = Omit<Lead, "accountId" | "datasetId"> & { score: number };

function toDto(row: LeadRow): LeadDto {
  return {
    leadId: row.id,
    organizationName: row.organizationName,
    organizationDomain: row.organizationDomain,
    domainSource: row.domainSource,
    industry: row.industry,
    employeeCount: row.employeeCount,
    country: row.country,
    city: row.city,
    firstVisitAt: row.firstVisitAt.toISOString(),
    lastVisitAt: row.lastVisitAt.toISOString(),
    visitCount: row.visitCount,
    tags: row.tags,
    assigneeUserId: row.assigneeUserId === null ? null : Number(row.assigneeUserId),
    score: row.score,
    identitySource: row.identitySource,
    identityConfidence: row.identityConfidence,
  };
}

/** A cursor's position, only in the order it was made for (a score cursor does not page by last visit). */
const positionReader =
  (sort: LeadSort) =>
  (value: unknown): LeadPosition | undefined => {
    const { t, s, id } = (value ?? {}) as { t?: unknown; s?: unknown; id?: unknown };
    if (typeof id !== "string" || !id) return undefined;
    if (sort === "score") return Number.isInteger(s) ? { score: s as number, leadId: id } : undefined;
    if (typeof t !== "string" || Number.isNaN(Date.parse(t))) return undefined;
    return { lastVisitAt: t, leadId: id };
  };

const positionOf = (sort: LeadSort) => (last: LeadDto) => (sort === "score" ? { s: last.score, id: last.leadId } : { t: last.lastVisitAt, id: last.leadId });

/** Tags as stored: normalised, without duplicates, in code-unit order. */
const storedTags = (tags: readonly string[] = []) => [...new Set(tags.map(normaliseTag))].sort();

export interface LeadDeps {
  db: Db;
}

/**
 * Stores leads reported by tracking (also how tests and the demo get leads): there is no API
 * that creates them. Returns how many were inserted.
 */
export async function insertLeads(deps: LeadDeps, accountId: string, datasetId: string, leads: readonly NewLead[]): Promise<number> {
  await access.dataset(deps, accountId, datasetId);
  const rows = leads.map((lead) => ({
    accountId,
    datasetId,
    id: lead.leadId,
    organizationName: lead.organizationName,
    organizationDomain: lead.organizationDomain?.toLowerCase() ?? null,
    domainSource: lead.organizationDomain ? (lead.domainSource ?? "curated") : null,
    industry: lead.industry ?? null,
    employeeCount: lead.employeeCount ?? null,
    country: lead.country?.toUpperCase() ?? null,
    city: lead.city ?? null,
    firstVisitAt: lead.firstVisitAt,
    lastVisitAt: lead.lastVisitAt,
    visitCount: lead.visitCount ?? 1,
    tags: storedTags(lead.tags),
    assigneeUserId: lead.assigneeUserId == null ? null : BigInt(lead.assigneeUserId),
    identitySource: lead.identitySource ?? "network",
    identityConfidence: lead.identityConfidence ?? 1,
  }));
  return storeLeads(deps.db, rows);
}

/** One page of the dataset's visible leads; the acting user must reach the dataset. */
export async function list(deps: LeadDeps, accountId: string, query: LeadQuery): Promise<Schemas["GetAllResponseLeadDTO"]> {
  const sort = query.sort;
  const after = decodeCursor(query.cursor, positionReader(sort));
  if (query.filter) checkFilter(query.filter, "query", "filter");
  const actor = await access.actor(deps, accountId, query.email);
  await access.dataset(deps, accountId, query.datasetId);
  const segmentFilter = query.segmentId === undefined ? undefined : await segments.filtersOf(deps, accountId, query.datasetId, query.segmentId);
  await access.requireAccess(deps, actor, query.datasetId);
  const bySource = query.identitySource && identitySourceFilter(query.identitySource);
  const filters = [segmentFilter, query.filter, bySource].filter((f): f is SegmentFilter => !!f);
  const limit = query.limit;
  const rows = await deps.db.$queryRaw<LeadRow[]>(leadListingSql({ datasetId: query.datasetId, filters, after, limit: limit + 1, sort }));
  return toPage(rows.map(toDto), limit, positionOf(sort));
}

/** The dataset's rules grouped by type (in enum order), values in code-unit order. */
export async function exclusions(deps: LeadDeps, accountId: string, datasetId: string, type?: ExclusionType): Promise<ExclusionGroup[]> {
  await access.dataset(deps, accountId, datasetId);
  const rules = await deps.db.datasetExclusion.findMany({ where: { accountId, datasetId, ...(type && { type }) }, select: { type: true, value: true } });
  return EXCLUSION_TYPES
    .map((t) => ({ type: t, data: rules.filter((r) => r.type === t).map((r) => r.value).sort() }))
    .filter((group) => group.data.length > 0);
}

/** Adds a rule; the primary key on its compared form refuses a duplicate in one statement. */
export async function addExclusion(deps: LeadDeps, accountId: string, { datasetId, type, data }: ExclusionRule): Promise<void> {
  await access.dataset(deps, accountId, datasetId);
  const inserted = await deps.db.$executeRaw`
    INSERT INTO "DatasetExclusion" ("accountId", "datasetId", "type", "value", "valueKey")
    VALUES (${accountId}, ${datasetId}, ${type}::"ExclusionType", ${data}, ${ruleKey(type, data)})
    ON CONFLICT DO NOTHING`;
  if (inserted === 0) throw new Conflict(`Dataset ${datasetId} already has the ${type} rule "${data}"`);
}

export async function removeExclusion(deps: LeadDeps, accountId: string, { datasetId, type, data }: ExclusionRule): Promise<void> {
  await access.dataset(deps, accountId, datasetId);
  const removed = await deps.db.$executeRaw`
    DELETE FROM "DatasetExclusion"
    WHERE "datasetId" = ${datasetId} AND "type" = ${type}::"ExclusionType" AND "valueKey" = ${ruleKey(type, data)}`;
  if (removed === 0) throw new NotFound(`Dataset ${datasetId} has no ${type} rule "${data}"`);
}
