// Deterministic demo profiles: profile `i` of seed `s` is always the same, computed on its own
// (no state between profiles), so the benchmark and the demo can name addresses that exist
// without reading them back. Every address is unique: its local part ends in the profile's index.
import { once } from "node:events";
import { createWriteStream } from "node:fs";
import type { ContactExperience, ContactProfile } from "./profile.ts";
import { csvColumns, formatOf } from "./import.ts";
import { seededRandom } from "../seeded-random.ts";


/** A 32-bit seed from the generator seed and the index. */
function mix(seed: number, index: number): number {
  let h = Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(index + 1, 0xc2b2ae35);
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d);
  return (h ^ (h >>> 15)) >>> 0;
}

const firstNames = ("Jane John Maria Li Ahmed Sofia Lukas Emma Noah Olivia Mateo Aisha Yuki Chen Priya Lars Ana Omar " +
  "Elena Tom Sara David Fatima Ivan Chloe Hugo Mia Kenji Zoe Ben Nora Raj Lea Paul Ines Felix Amara Diego Hanna Leo").split(" ");
const lastNames = ("Doe Smith Müller Garcia Rossi Kowalski Nguyen Tanaka Silva Johansson Dubois Novak Haddad Okafor " +
  "Schmidt Brown Kim Patel Jensen Costa Fischer Moreau Ivanova Santos Weber Lopez Becker Martin Ali Meyer Wang Hughes").split(" ");
const companyStems = ("Acme Globex Initech Umbrella Northwind Contoso Fabrikam Tailspin Wingtip Litware Proseware Adatum " +
  "Lucerne Fourth Coffee Blue Yonder Humongous Margie Trey Woodgrove Alpine Bright Silver Cedar Harbor Summit").split(" ");
const companyKinds = ["Labs", "Systems", "Logistics", "Foods", "Analytics", "Software", "Energy", "Health", "Media", "Capital"];
const legalForms = ["Inc", "GmbH", "Ltd", "SA", "Corporation", "AG", ""];
const functions: Record<string, string[]> = {
  marketing: ["Marketing Assistant", "Marketing Manager", "Head of Marketing", "VP Marketing", "Chief Marketing Officer"],
  sales: ["Sales Representative", "Account Executive", "Sales Director", "VP Sales", "Chief Revenue Officer"],
  engineering: ["Software Engineer", "Senior Software Engineer", "Engineering Manager", "VP Engineering", "Chief Technology Officer"],
  finance: ["Financial Analyst", "Senior Accountant", "Finance Manager", "VP Finance", "Chief Financial Officer"],
  operations: ["Operations Associate", "Operations Specialist", "Operations Manager", "VP Operations", "Chief Operating Officer"],
  human_resources: ["HR Assistant", "HR Generalist", "HR Manager", "VP People", "Chief People Officer"],
  product: ["Product Analyst", "Product Manager", "Group Product Manager", "VP Product", "Chief Product Officer"],
};
const seniorities = ["entry", "senior", "manager", "vp", "c_level"];
const locations = ("Berlin, Germany|London, United Kingdom|Paris, France|Madrid, Spain|Milan, Italy|Warsaw, Poland|" +
  "Stockholm, Sweden|Amsterdam, Netherlands|New York, United States|Austin, United States|Toronto, Canada|" +
  "São Paulo, Brazil|Tokyo, Japan|Singapore, Singapore|Bangalore, India|Sydney, Australia|Nairobi, Kenya").split("|");
const languages = ["English", "German", "French", "Spanish", "Italian", "Polish", "Portuguese", "Japanese", "Hindi", "Swedish"];
const proficiencies = ["native", "fluent", "professional", "elementary"];

type Pick = <T>(list: readonly T[]) => T;

function company(pick: Pick): { name: string; domain: string } {
  const stem = pick(companyStems);
  const kind = pick(companyKinds);
  const form = pick(legalForms);
  return { name: [stem, kind, form].filter(Boolean).join(" "), domain: `${stem}${kind}.example`.toLowerCase() };
}

function slug(name: string): string {
  return name.normalize("NFKD").replace(/[\u0300-\u036f]/g, "").toLowerCase().replace(/[^a-z]/g, "");
}

/** Positions newest first: the newest is usually current; each earlier one ends the year the next began. */
function career(pick: Pick, rnd: () => number, role: string[], level: number, current: string): ContactExperience[] {
  const count = 1 + Math.floor(rnd() * 4);
  const positions: ContactExperience[] = [];
  let nextStart = 2025 - Math.floor(rnd() * 8);
  for (let p = 0; p < count; p++) {
    const title = role[Math.max(0, level - p)]!;
    const companyName = p === 0 ? current : company(pick).name;
    if (p === 0) {
      const ongoing = rnd() < 0.92;
      const end = Math.min(2025, nextStart + Math.floor(rnd() * 3));
      positions.push(ongoing ? { title, companyName, startYear: nextStart, current: true } : { title, companyName, startYear: nextStart, endYear: end, current: false });
      continue;
    }
    const startYear = nextStart - 1 - Math.floor(rnd() * 5);
    positions.push({ title, companyName, startYear, endYear: nextStart, current: false });
    nextStart = startYear;
  }
  return positions;
}

export function generateProfile(seed: number, index: number): ContactProfile {
  const rnd = seededRandom(mix(seed, index));
  const pick: Pick = (list) => list[Math.floor(rnd() * list.length)]!;
  const first = pick(firstNames);
  const last = pick(lastNames);
  const employer = company(pick);
  const [fn, role] = pick(Object.entries(functions));
  const level = Math.floor(rnd() * seniorities.length);
  const experience = career(pick, rnd, role, level, employer.name);
  const patterns = [`${slug(first)}.${slug(last)}`, `${slug(first)[0]}${slug(last)}`, `${slug(first)}_${slug(last)}`];
  const spoken = [...new Set([pick(languages), pick(languages), pick(languages)].slice(0, 1 + Math.floor(rnd() * 3)))];
  const profile: ContactProfile = {
    email: `${pick(patterns)}${index}@${employer.domain}`,
    fullName: `${first} ${last}`,
    headline: `${experience[0]!.title} at ${experience[0]!.companyName}`,
    linkedinUrl: `https://www.linkedin.com/in/${slug(first)}-${slug(last)}-${index.toString(36)}`,
    seniority: seniorities[level]!,
    jobFunction: fn,
    location: pick(locations),
    languages: spoken.map((name, i) => ({ name, proficiency: i === 0 ? "native" : pick(proficiencies) })),
    experience,
  };
  if (rnd() < 0.1) delete profile.location; // some profiles lack a field: it is then absent
  if (rnd() < 0.05) delete profile.headline;
  return profile;
}

/** Profiles `0 .. count-1` of the seed. */
export function* generateProfiles(seed: number, count: number): Generator<ContactProfile> {
  for (let i = 0; i < count; i++) yield generateProfile(seed, i);
}

function csvCell(value: unknown): string {
  if (value === undefined) return "";
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

function csvLine(profile: ContactProfile): string {
  return csvColumns.map((column) => csvCell(profile[column])).join(",");
}

/** Writes `count` profiles to `file`, NDJSON or CSV by its extension; waits for the disk (bounded memory). */
export async function writeProfiles(file: string, seed: number, count: number): Promise<void> {
  const csv = formatOf(file) === "csv";
  const out = createWriteStream(file);
  const done = once(out, "finish");
  if (csv) out.write(csvColumns.join(",") + "\n");
  let chunk: string[] = [];
  for (const profile of generateProfiles(seed, count)) {
    chunk.push(csv ? csvLine(profile) : JSON.stringify(profile));
    if (chunk.length === 1000) {
      if (!out.write(chunk.join("\n") + "\n")) await once(out, "drain");
      chunk = [];
    }
  }
  if (chunk.length) out.write(chunk.join("\n") + "\n");
  out.end();
  await done;
}
