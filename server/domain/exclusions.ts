// Dataset exclusion rules: which leads a partner no longer sees. One rule hides the leads whose
// id, organisation name or organisation domain (names and domains case-insensitively) it names.
// Shared by the lead listing (services/), segment entries and alerts, and webhook events
// (notify/): the SQL below reads a lead under the alias `l`.
import type { components } from "../../generated/openapi.ts";
import { Prisma } from "../../generated/prisma/client.ts";

export type ExclusionType = components["schemas"]["ExclusionType"];

/** The order of the groups in an exclusion listing: the spec's enum order. */
export const EXCLUSION_TYPES: readonly ExclusionType[] = ["use_id", "organizationName", "organizationDomain"];

/** How a rule's value meets a lead: its compared form is lower(value), except for use_id. */
export const ruleKey = (type: ExclusionType, value: string) => (type === "use_id" ? Prisma.sql`${value}` : Prisma.sql`lower(${value})`);

const hiddenBy: Record<ExclusionType, Prisma.Sql> = {
  use_id: Prisma.sql`l."id"`,
  organizationName: Prisma.sql`lower(l."organizationName")`,
  organizationDomain: Prisma.sql`lower(l."organizationDomain")`,
};

/** One anti-join per rule type, each served by the rules' primary key (datasetId, type, valueKey). */
export const notExcluded = Prisma.join(
  EXCLUSION_TYPES.map(
    (type) => Prisma.sql`NOT EXISTS (SELECT 1 FROM "DatasetExclusion" e
      WHERE e."datasetId" = l."datasetId" AND e."type" = ${type}::"ExclusionType" AND e."valueKey" = ${hiddenBy[type]})`,
  ),
  " AND ",
);
