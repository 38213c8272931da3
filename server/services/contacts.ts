// The contact store: professional profiles keyed by normalised e-mail address.
import type { Db } from "../db/database.ts";
import { Prisma } from "../../generated/prisma/client.ts";
import type { ContactStore } from "../contacts/import.ts";
import type { ContactProfile, UpsertResult } from "../contacts/profile.ts";
import { normaliseEmail } from "../ids.ts";

export type ContactRow = NonNullable<Awaited<ReturnType<Db["contact"]["findUnique"]>>>;

/** Absent, not null, when unknown (the spec's ContactProfile); fields in the spec's order (jsonb keeps its own). */
export function toProfile(row: ContactRow): ContactProfile {
  return withoutUndefined({
    email: row.email,
    fullName: row.fullName,
    headline: row.headline ?? undefined,
    linkedinUrl: row.linkedinUrl ?? undefined,
    seniority: row.seniority ?? undefined,
    jobFunction: row.jobFunction ?? undefined,
    location: row.location ?? undefined,
    languages: (row.languages as ContactProfile["languages"]).map(({ name, proficiency }) => withoutUndefined({ name, proficiency })),
    experience: (row.experience as ContactProfile["experience"]).map(({ title, companyName, startYear, endYear, current }) =>
      withoutUndefined({ title, companyName, startYear, endYear, current }),
    ),
  }) as ContactProfile;
}

/** The object without its undefined fields (as JSON.stringify would write it). */
function withoutUndefined<T extends object>(object: T): T {
  for (const key in object) if (object[key] === undefined) delete object[key];
  return object;
}

/** The contact row of an address, as a query (to be read together with something else). */
export function contactQuery(email: string): Prisma.Sql {
  return Prisma.sql`
    SELECT email, "fullName", headline, "linkedinUrl", seniority, "jobFunction", location, languages, experience
    FROM "Contact" WHERE email = ${normaliseEmail(email)}`;
}

export interface ContactDeps {
  db: Db;
}

export async function find({ db }: ContactDeps, email: string): Promise<ContactProfile | undefined> {
  const row = await db.contact.findUnique({ where: { email: normaliseEmail(email) } });
  return row ? toProfile(row) : undefined;
}

/** The profiles of the given (normalised) addresses, in one query, keyed by address. */
export async function findMany({ db }: ContactDeps, emails: readonly string[]): Promise<Map<string, ContactProfile>> {
  const rows = emails.length ? await db.contact.findMany({ where: { email: { in: [...emails] } } }) : [];
  return new Map(rows.map((row) => [row.email, toProfile(row)]));
}

/**
 * Inserts or updates a batch in one statement (the whole batch travels as one JSON
 * parameter). E-mails must be normalised and unique within the batch: a statement cannot
 * update one row twice.
 */
export async function upsertMany({ db }: ContactDeps, profiles: readonly ContactProfile[]): Promise<UpsertResult> {
  if (!profiles.length) return { inserted: 0, updated: 0, unchanged: 0 };
  const [counts] = await db.$queryRaw<{ inserted: number; updated: number }[]>`
    WITH incoming AS (
      SELECT * FROM jsonb_to_recordset(${JSON.stringify(profiles)}::jsonb) AS r(
        email text, "fullName" text, headline text, "linkedinUrl" text, seniority text,
        "jobFunction" text, location text, languages jsonb, experience jsonb)
    ), written AS (
      INSERT INTO "Contact" (email, "fullName", headline, "linkedinUrl", seniority, "jobFunction", location, languages, experience)
      SELECT email, "fullName", headline, "linkedinUrl", seniority, "jobFunction", location, languages, experience FROM incoming
      ON CONFLICT (email) DO UPDATE SET
        "fullName" = EXCLUDED."fullName", headline = EXCLUDED.headline, "linkedinUrl" = EXCLUDED."linkedinUrl",
        seniority = EXCLUDED.seniority, "jobFunction" = EXCLUDED."jobFunction", location = EXCLUDED.location,
        languages = EXCLUDED.languages, experience = EXCLUDED.experience
      WHERE ("Contact"."fullName", "Contact".headline, "Contact"."linkedinUrl", "Contact".seniority,
             "Contact"."jobFunction", "Contact".location, "Contact".languages, "Contact".experience)
            IS DISTINCT FROM
            (EXCLUDED."fullName", EXCLUDED.headline, EXCLUDED."linkedinUrl", EXCLUDED.seniority,
             EXCLUDED."jobFunction", EXCLUDED.location, EXCLUDED.languages, EXCLUDED.experience)
      -- xmax is 0 on a row this statement inserted, set on one it updated
      RETURNING (xmax = 0) AS inserted
    )
    SELECT count(*) FILTER (WHERE inserted)::int AS inserted, count(*) FILTER (WHERE NOT inserted)::int AS updated
    FROM written`;
  const inserted = counts?.inserted ?? 0;
  const updated = counts?.updated ?? 0;
  return { inserted, updated, unchanged: profiles.length - inserted - updated };
}

export function count({ db }: ContactDeps): Promise<number> {
  return db.contact.count();
}

/** The store the contact import (server/contacts/, below services/) writes its batches to. */
export function importStore(deps: ContactDeps): ContactStore {
  return { upsertMany: (profiles) => upsertMany(deps, profiles) };
}
