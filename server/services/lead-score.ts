// The lead score: 0-100, computed by the database at query time from the lead's stored facts, so
// that the answer, the sort and segment filters use one expression and recency never goes stale.
//
//   score = round( 30 * 0.5 ^ (days since the last visit / 7)             recency (half-life 7 days)
//                + 20 * min(page views, 20) / 20                         frequency
//                + 25 * min(weighted distinct pages, 10) / 10            depth
//                + 15 * min(identified visitors, 2) / 2                  visitors who gave an e-mail address
//                + 10 * min(submitted forms, 2) / 2 )                    forms (partial ones do not count)
//
// A distinct page (URL path, as server/tracking/write/batch.ts pagePath stores it) weighs 1, or the weight of the first of the dataset's page weights
// whose pattern matches it (`/pricing` x3: a visit to the pricing page counts as three pages).
import { Prisma } from "../../generated/prisma/client.ts";
import { Invalid } from "../domain/errors.ts";

export interface PageWeight {
  pattern: string;
  weight: number;
}

/** A page weight as stored: with its pattern as a LIKE pattern on `path || '/'`. */
export interface StoredPageWeight extends PageWeight {
  like: string;
}

/** A pattern as compared: lower case, without a trailing slash. */
const normalisePattern = (pattern: string) => pattern.trim().toLowerCase().replace(/\/+$/, "");

/**
 * `*` matches any characters; a pattern matches its path and every path below it (`/pricing`:
 * `/pricing`, `/pricing/teams`; `/` every page). LIKE's own wildcards are escaped.
 */
export function likeOf(pattern: string): string {
  const escaped = normalisePattern(pattern).replace(/[\\%_]/g, (c) => `\\${c}`).replace(/\*/g, "%");
  return `${escaped}/%`;
}

/** 400 for two patterns that compare equal (the schema checks each one); the weights as stored. */
export function storedPageWeights(weights: readonly PageWeight[]): StoredPageWeight[] {
  const seen = new Map<string, number>();
  weights.forEach((w, i) => {
    const key = normalisePattern(w.pattern);
    const first = seen.get(key);
    if (first !== undefined) {
      throw new Invalid("Each pattern may appear once", [{ location: "body", field: `weights[${i}].pattern`, message: `repeats weights[${first}].pattern` }]);
    }
    seen.set(key, i);
  });
  return weights.map((w) => ({ pattern: w.pattern, weight: w.weight, like: likeOf(w.pattern) }));
}

/** The weighted distinct pages of lead l: each page's first matching weight, else 1. */
const WEIGHTED_PAGES = `COALESCE((SELECT sum(COALESCE((
      SELECT (w.value->>'weight')::numeric FROM "Dataset" d
      CROSS JOIN LATERAL jsonb_array_elements(d."pageWeights") WITH ORDINALITY AS w(value, n)
      WHERE d.id = p."datasetId" AND p.path || '/' LIKE w.value->>'like' ORDER BY w.n LIMIT 1), 1))
    FROM "LeadPage" p WHERE p."datasetId" = l."datasetId" AND p."leadId" = l.id), 0)`;

const IDENTIFIED_VISITORS = `(SELECT count(*) FROM "Visitor" v WHERE v."datasetId" = l."datasetId" AND v."leadId" = l.id AND v.email IS NOT NULL)`;

const SUBMITTED_FORMS = `(SELECT count(*) FROM "FormSubmission" f WHERE f."datasetId" = l."datasetId" AND f."leadId" = l.id AND NOT f.partial)`;

const DAYS_SINCE_LAST_VISIT = `GREATEST(extract(epoch FROM (now() - l."lastVisitAt")), 0) / 86400.0`;

/** The score of "Lead" l as SQL text (no parameters: the same text serves select, order and filter). */
export const SCORE_SQL = `(round(
    30 * power(0.5, LEAST(${DAYS_SINCE_LAST_VISIT} / 7, 100))
  + 20 * LEAST(l."visitCount", 20) / 20.0
  + 25 * LEAST(${WEIGHTED_PAGES}, 10) / 10.0
  + 15 * LEAST(${IDENTIFIED_VISITORS}, 2) / 2.0
  + 10 * LEAST(${SUBMITTED_FORMS}, 2) / 2.0)::int)`;

export const scoreSql = Prisma.raw(SCORE_SQL);
