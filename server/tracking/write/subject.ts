// A data subject of an erasure or an export, and the SQL that finds its rows: a leaf, so that the
// stores (visit-store.ts) and the erasure's steps (erasure.ts) both use it without an import circle.
import { Prisma } from "../../../generated/prisma/client.ts";

/** One data subject, checked: a visitor id or a normalised e-mail address. */
export type Subject = { type: "visitor"; visitorId: string } | { type: "person"; email: string };

export const jsonList = (values: readonly string[]) => Prisma.sql`(SELECT jsonb_array_elements_text(${JSON.stringify(values)}::jsonb))`;

/**
 * A jsonb object of form fields with a value that is the address (trimmed, any case). A search of
 * its text comes first: it spares the many rows without the address the walk through their fields
 * (an address holds no character that JSON escapes).
 */
export const carries = (fields: Prisma.Sql, email: string) =>
  Prisma.sql`(strpos(lower((${fields})::text), ${email}) > 0
    AND EXISTS (SELECT 1 FROM jsonb_each_text(${fields}) f WHERE lower(btrim(f.value)) = ${email}))`;
