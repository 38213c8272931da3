// A contact profile as the import reads it: checked against the spec's own ContactProfile schema
// (the single source of its fields), plus the rules a schema cannot say.
import type { components } from "../../generated/openapi.ts";
import { loadContract } from "../contract.ts";
import { normaliseEmail } from "../ids.ts";

export type ContactProfile = components["schemas"]["ContactProfile"];
export type ContactExperience = components["schemas"]["ContactExperience"];

export type ProfileCheck = { ok: true; profile: ContactProfile } | { ok: false; reason: string };

interface SchemaError {
  instancePath: string;
  keyword: string;
  params: { additionalProperty?: string; missingProperty?: string };
  message?: string;
}

/** The spec's ContactProfile schema, from the process's one compiled contract. */
function schemaValidator(): ((value: unknown) => boolean) & { errors?: SchemaError[] | null } {
  return loadContract().component("ContactProfile");
}

/** `experience/0/endYear must be integer` -> `experience[0].endYear: must be integer`, as an operator reads it. */
function reasonOf(error: SchemaError | undefined): string {
  if (!error) return "(record): is invalid";
  const at = error.instancePath.replace(/^\//, "").replace(/\/(\d+)/g, "[$1]").replace(/\//g, ".");
  const field = (name: string) => (at ? `${at}.${name}` : name);
  if (error.keyword === "required") return `${field(error.params.missingProperty ?? "?")}: is required`;
  if (error.keyword === "additionalProperties") return `${field(error.params.additionalProperty ?? "?")}: is not a profile field`;
  return `${at || "(record)"}: ${error.message ?? "is invalid"}`;
}

/** What the schema cannot express: a current position has no end, and nothing ends before it starts. */
function experienceProblem(experience: ContactExperience[]): string | undefined {
  for (const [i, position] of experience.entries()) {
    if (position.current && position.endYear !== undefined) return `experience[${i}].endYear: must be absent on a current position`;
    if (position.startYear !== undefined && position.endYear !== undefined && position.endYear < position.startYear) {
      return `experience[${i}].endYear: must not be before startYear`;
    }
  }
  return undefined;
}

/**
 * Checks one imported record and returns the profile to store: e-mail normalised, empty
 * optional strings dropped (CSV cells), or the reason it is rejected.
 */
export function checkProfile(record: unknown): ProfileCheck {
  if (typeof record !== "object" || record === null || Array.isArray(record)) return { ok: false, reason: "not an object" };
  const cleaned: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(record)) if (value !== "" && value !== null) cleaned[key] = value;
  if (typeof cleaned.email === "string") cleaned.email = normaliseEmail(cleaned.email);
  cleaned.languages ??= [];
  cleaned.experience ??= [];
  const validate = schemaValidator();
  if (!validate(cleaned)) {
    return { ok: false, reason: reasonOf(validate.errors?.[0]) };
  }
  const profile = cleaned as ContactProfile;
  const problem = experienceProblem(profile.experience);
  return problem ? { ok: false, reason: problem } : { ok: true, profile };
}

/** What writing a batch of profiles to the contact store did. */
export interface UpsertResult {
  /** New profiles. */
  inserted: number;
  /** Existing profiles whose fields changed. */
  updated: number;
  /** Existing profiles that were already the same (a re-run of an import). */
  unchanged: number;
}
