// Cursor paging. A cursor is the position of a page's last item (never an offset), as base64url
// JSON: items added while a client pages do not shift the pages.
import { Invalid } from "../domain/errors.ts";

/** The position a cursor carries, checked by `read`; 400 for anything this API did not issue. */
export function decodeCursor<P>(cursor: string | undefined, read: (value: unknown) => P | undefined): P | undefined {
  if (cursor === undefined) return undefined;
  let position: P | undefined;
  try {
    position = read(JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")));
  } catch {
    position = undefined;
  }
  if (position === undefined) {
    throw new Invalid("Invalid request: the cursor is not one this API returned", [
      { location: "query", field: "cursor", message: "is not a cursor this API returned" },
    ]);
  }
  return position;
}

/** A page from up to limit + 1 rows: the extra row only says that another page follows. */
export function toPage<T>(rows: T[], limit: number, positionOf: (last: T) => unknown): { data: T[]; nextCursor: string | null } {
  const data = rows.slice(0, limit);
  const last = data[data.length - 1];
  const more = rows.length > limit && last !== undefined;
  return { data, nextCursor: more ? Buffer.from(JSON.stringify(positionOf(last))).toString("base64url") : null };
}

/** The position of a cursor `{ after: id }` over positive integer ids (`toPage(..., (last) => ({ after: id }))`). */
export function readAfterId(value: unknown): number | undefined {
  const after = (value as { after?: unknown } | null)?.after;
  return Number.isSafeInteger(after) && (after as number) > 0 ? (after as number) : undefined;
}
