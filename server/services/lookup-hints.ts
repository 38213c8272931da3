// The optional hints of an e-mail lookup confirm the profile the address selects; a hint the
// profile does not confirm makes the lookup a miss, so a partner never pays for a profile of
// someone else (a recycled or shared address). The rules are described in the spec
// (ContactEnrichmentRequest); keep the two in step.
import type { ContactProfile } from "../contacts/profile.ts";
import type { Schemas } from "../domain/types.ts";

export type Hints = Omit<Schemas["ContactEnrichmentRequest"], "email">;

/** Words without accents, case or punctuation: "Müller-Lüdenscheidt" -> ["muller", "ludenscheidt"]. */
export function words(text: string): string[] {
  return text
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);
}

const legalForms = new Set(
  "inc incorporated corp corporation co company llc llp ltd limited plc gmbh ag kg sa sas sarl srl spa bv nv oy ab as pty".split(" "),
);

/** A company name without its legal form, as one word: "Acme Corporation" and "ACME, Inc." -> "acme". */
export function companyKey(name: string): string {
  const all = words(name);
  const core = all.filter((w) => !legalForms.has(w));
  return (core.length ? core : all).join("");
}

const startsWith = (list: string[], prefix: string[]) => prefix.length > 0 && prefix.every((w, i) => list[i] === w);
const endsWith = (list: string[], suffix: string[]) => startsWith([...list].reverse(), [...suffix].reverse());

function firstNameAgrees(hint: string, name: string[]): boolean {
  const given = words(hint);
  // an initial ("J" or "J.") agrees with the first name it begins
  if (given.length === 1 && given[0]!.length === 1) return name[0]?.startsWith(given[0]!) ?? false;
  return startsWith(name, given);
}

function domainAgrees(hint: string, email: string, companies: string[]): boolean {
  const domain = hint.toLowerCase().replace(/\.$/, "").replace(/^www\./, "");
  const mailDomain = email.slice(email.lastIndexOf("@") + 1);
  if (mailDomain === domain || mailDomain.endsWith(`.${domain}`)) return true;
  const labels = domain.split(".").slice(0, -1); // without the top-level domain
  return labels.some((label) => companies.includes(companyKey(label)));
}

/** The first hint the profile does not confirm, or undefined when every given hint agrees. */
export function contradictedHint(profile: ContactProfile, hints: Hints): keyof Hints | undefined {
  const name = words(profile.fullName);
  const companies = profile.experience.map((p) => companyKey(p.companyName));
  const checks: { [K in keyof Hints]-?: (hint: string) => boolean } = {
    firstName: (hint) => firstNameAgrees(hint, name),
    lastName: (hint) => endsWith(name, words(hint)),
    companyName: (hint) => companies.includes(companyKey(hint)),
    companyDomain: (hint) => domainAgrees(hint, profile.email, companies),
  };
  return (Object.keys(checks) as (keyof Hints)[]).find((k) => hints[k] !== undefined && !checks[k](hints[k]));
}
