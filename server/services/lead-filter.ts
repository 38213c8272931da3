// Segment filters: checked against the lead fields' types (a 400 naming the condition) and
// compiled into a parameterised SQL condition on "Lead" l, so that the database evaluates them.
// Values only ever travel as query parameters; column names come from the fixed table below.
import type { components } from "../../generated/openapi.ts";
import { Prisma } from "../../generated/prisma/client.ts";
import { Invalid, type InvalidField } from "../domain/errors.ts";
import { SCORE_SQL } from "./lead-score.ts";
import { normaliseTag, tagProblem } from "./tags.ts";

export type SegmentFilter = components["schemas"]["SegmentFilter"];
type Condition = SegmentFilter["conditions"][number];
type Field = Condition["field"];
type Operator = Condition["operator"];
type Scalar = string | number;

type Kind = "text" | "number" | "date" | "tags" | "identitySource";

/** The values of IdentitySource (the spec's enum), in its order. */
export const IDENTITY_SOURCES: readonly components["schemas"]["IdentitySource"][] = ["network", "reverse_dns", "form_email", "declared"];

const fields: Record<Field, { kind: Kind; column: string }> = {
  organizationName: { kind: "text", column: `l."organizationName"` },
  organizationDomain: { kind: "text", column: `l."organizationDomain"` },
  industry: { kind: "text", column: `l."industry"` },
  country: { kind: "text", column: `l."country"` },
  city: { kind: "text", column: `l."city"` },
  employeeCount: { kind: "number", column: `l."employeeCount"` },
  visitCount: { kind: "number", column: `l."visitCount"` },
  assigneeUserId: { kind: "number", column: `l."assigneeUserId"` },
  firstVisitAt: { kind: "date", column: `l."firstVisitAt"` },
  lastVisitAt: { kind: "date", column: `l."lastVisitAt"` },
  tags: { kind: "tags", column: `l."tags"` },
  // computed at query time (lead-score.ts): the same expression as the listing's score and sort
  score: { kind: "number", column: SCORE_SQL },
  identitySource: { kind: "identitySource", column: `l."identitySource"::text` },
};

const operators: Record<Kind, readonly Operator[]> = {
  text: ["eq", "neq", "contains", "in", "exists"],
  number: ["eq", "neq", "gte", "lte", "in", "exists"],
  date: ["gte", "lte", "exists"],
  tags: ["contains", "in", "exists"],
  identitySource: ["eq", "neq", "in"],
};

const isoDate = /^\d{4}-\d{2}-\d{2}$/;
const isoDateTime = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/i;

/** An RFC 3339 date-time, or a date meaning midnight UTC, as an ISO string; undefined if neither. */
function parseDate(value: string): string | undefined {
  if (!isoDate.test(value) && !isoDateTime.test(value)) return undefined;
  const time = Date.parse(isoDate.test(value) ? `${value}T00:00:00Z` : value);
  return Number.isNaN(time) ? undefined : new Date(time).toISOString();
}

/** Why a single value does not fit a field of this kind, or undefined when it does. */
function scalarProblem(kind: Kind, value: unknown): string | undefined {
  switch (kind) {
    case "text":
      return typeof value === "string" && value.length > 0 ? undefined : "must be a non-empty string";
    case "number":
      return Number.isSafeInteger(value) ? undefined : "must be an integer";
    case "date":
      return typeof value === "string" && parseDate(value) ? undefined : "must be an RFC 3339 date-time or a date (YYYY-MM-DD)";
    case "tags":
      return typeof value === "string" ? tagProblem(normaliseTag(value)) : "must be a string";
    case "identitySource":
      return IDENTITY_SOURCES.includes(value as never) ? undefined : `must be one of ${IDENTITY_SOURCES.join(", ")}`;
  }
}

/** Why the value does not fit the operator and the field, or undefined when it does. */
function valueProblem(kind: Kind, operator: Operator, value: unknown): string | undefined {
  if (operator === "exists") return typeof value === "boolean" ? undefined : "must be a boolean with operator exists";
  if (operator !== "in") return scalarProblem(kind, value);
  if (!Array.isArray(value) || value.length === 0) return "must be a non-empty array with operator in";
  const problem = value.map((v) => scalarProblem(kind, v)).find(Boolean);
  return problem && `each item ${problem}`;
}

/**
 * 400 unless every condition's operator fits its field and its value fits both. Details name
 * the condition, e.g. `filters.conditions[2].value` (`prefix` is `filters` or `filter`).
 */
export function checkFilter(filter: SegmentFilter, location: InvalidField["location"], prefix: string): void {
  const details = filter.conditions.flatMap((c, i): InvalidField[] => {
    const { kind } = fields[c.field];
    const field = `${prefix}.conditions[${i}]`;
    if (!operators[kind].includes(c.operator)) {
      const allowed = operators[kind].join(", ");
      return [{ location, field: `${field}.operator`, message: `${c.operator} does not apply to ${c.field} (use ${allowed})` }];
    }
    const problem = valueProblem(kind, c.operator, c.value);
    return problem ? [{ location, field: `${field}.value`, message: problem }] : [];
  });
  if (details.length) throw new Invalid("The filter has conditions that do not fit their fields", details);
}

const list = (values: Prisma.Sql[]) => Prisma.join(values, ", ");

/** The condition as SQL. Text compares lower() on both sides; `neq` also matches a missing value. */
function conditionSql({ field, operator, value }: Condition): Prisma.Sql {
  const { kind, column: name } = fields[field];
  const column = Prisma.raw(name);
  if (kind === "tags") return tagsSql(column, operator, value);
  if (operator === "exists") return value ? Prisma.sql`${column} IS NOT NULL` : Prisma.sql`${column} IS NULL`;
  const param = (v: Scalar): Prisma.Sql =>
    kind === "text"
      ? Prisma.sql`lower(${v})`
      : kind === "date"
        ? Prisma.sql`${parseDate(String(v))}::timestamptz`
        : kind === "identitySource"
          ? Prisma.sql`${v}::text`
          : Prisma.sql`${v}::bigint`;
  const subject = kind === "text" ? Prisma.sql`lower(${column})` : column;
  const scalar = value as Scalar;
  switch (operator) {
    case "eq":
      return Prisma.sql`${subject} = ${param(scalar)}`;
    case "neq":
      return Prisma.sql`${subject} IS DISTINCT FROM ${param(scalar)}`;
    case "gte":
      return Prisma.sql`${subject} >= ${param(scalar)}`;
    case "lte":
      return Prisma.sql`${subject} <= ${param(scalar)}`;
    case "contains":
      return Prisma.sql`strpos(${subject}, ${param(scalar)}) > 0`;
    case "in":
      return Prisma.sql`${subject} IN (${list((value as Scalar[]).map(param))})`;
  }
}

/** Tag conditions use the array operators that the GIN index on "tags" serves. */
function tagsSql(column: Prisma.Sql, operator: Operator, value: Condition["value"]): Prisma.Sql {
  if (operator === "exists") return value ? Prisma.sql`cardinality(${column}) > 0` : Prisma.sql`cardinality(${column}) = 0`;
  const tags = (Array.isArray(value) ? value : [value]).map((v) => normaliseTag(String(v)));
  return operator === "contains" ? Prisma.sql`${column} @> ${tags}::text[]` : Prisma.sql`${column} && ${tags}::text[]`;
}

/** The filter as one parenthesised SQL condition (checkFilter must have accepted it). */
export function filterSql(filter: SegmentFilter): Prisma.Sql {
  return Prisma.sql`(${Prisma.join(filter.conditions.map(conditionSql), filter.match === "all" ? " AND " : " OR ")})`;
}
