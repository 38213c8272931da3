// Lead tags have one normal form, so that "Hot " and "hot" are the same tag wherever tags are
// stored, added, removed or filtered on.
import type { InvalidField } from "../domain/errors.ts";

export const MAX_TAGS_PER_LEAD = 100; // also a CHECK constraint on "Lead"."tags"
export const MAX_TAG_LENGTH = 64;

export function normaliseTag(tag: string): string {
  return tag.normalize("NFC").trim().replace(/\s+/g, " ").toLowerCase();
}

/** Why a normalised tag is not acceptable, or undefined. */
export function tagProblem(normalised: string): string | undefined {
  return normalised.length === 0 || normalised.length > MAX_TAG_LENGTH
    ? `must be 1 to ${MAX_TAG_LENGTH} characters once normalised`
    : undefined;
}

/**
 * The normal forms of `tags`, or the details of those that are empty or too long once
 * normalised (lower-casing can lengthen a string), each named by `field[index]`.
 */
export function normaliseTags(
  tags: readonly string[],
  where: Pick<InvalidField, "location" | "field">,
): { tags: string[]; problems: InvalidField[] } {
  const normalised = tags.map(normaliseTag);
  const problems = normalised.flatMap((tag, i) => {
    const message = tagProblem(tag);
    return message ? [{ location: where.location, field: `${where.field}[${i}]`, message }] : [];
  });
  return { tags: [...new Set(normalised)], problems };
}
