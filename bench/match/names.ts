// Names in the world: made-up companies under real public suffixes, people, e-mail addresses,
// browsers, and the reverse DNS (PTR) names networks give their addresses. Nothing here is asked
// of a real resolver: the bench's own DNS server on loopback answers these names.
import { createRequire } from "node:module";
import { getPublicSuffix } from "tldts";
import type { Random } from "./random.ts";

const require = createRequire(import.meta.url);
/** The free-mail providers the service excludes (the same package's list). */
const FREE_MAIL_LIST: ReadonlySet<string> = new Set((require("free-email-domains") as string[]).map((d) => d.toLowerCase()));
/** Providers people use in forms; only those the package lists count (a provider missing from it would be a business domain to the service). */
export const FREE_MAIL = ["gmail.com", "yahoo.com", "outlook.com", "hotmail.com", "gmx.de", "web.de", "icloud.com", "aol.com"].filter((d) => FREE_MAIL_LIST.has(d));
export const isFreeMail = (domain: string) => FREE_MAIL_LIST.has(domain.toLowerCase());

const STEMS = [
  "nordwind", "bluepeak", "mueller", "kessler", "vantara", "brightline", "oakridge", "silverfjord", "tecnova", "redwood",
  "castellan", "alpenstein", "lumora", "greystone", "helixon", "marlow", "quintara", "sunfield", "westbrook", "zentrix",
  "ironbridge", "fennwick", "korvex", "polarion", "stellan", "birchwood", "copperleaf", "deltaris", "everhart", "falkner",
  "granholm", "hartwell", "innovra", "jansen", "kranich", "lindqvist", "moravec", "norberg", "ostwald", "pellegrini",
  "quarzfeld", "rosenthal", "sandoval", "tavernier", "ulmer", "valbruna", "weidmann", "ximeno", "yellowfin", "zimmermann",
];
const TRADES = [
  "bau", "tools", "logistik", "consulting", "systems", "medical", "foods", "design", "engineering", "labs",
  "metall", "textil", "energy", "legal", "media", "robotics", "optics", "print", "freight", "dental",
];
const LEGAL_FORMS: Record<string, string> = {
  de: "GmbH", at: "GmbH", ch: "AG", es: "S.L.", fr: "SARL", it: "S.r.l.", pl: "Sp. z o.o.", se: "AB", dk: "ApS", no: "AS",
  fi: "Oy", nl: "B.V.", be: "BV", "co.uk": "Ltd", ca: "Inc.", com: "Inc.", us: "Inc.",
};
const FIRST = ["anna", "ben", "clara", "david", "eva", "felix", "greta", "hugo", "ines", "jonas", "karla", "lukas", "mia", "noah", "olga", "paul", "rosa", "sam", "tara", "viktor"];
const LAST = ["schmidt", "garcia", "nowak", "larsen", "rossi", "dubois", "smith", "novak", "jensen", "fischer", "lopez", "kowalski", "berg", "ricci", "martin", "weber", "brown", "silva", "meyer", "costa"];

const capital = (word: string) => word.charAt(0).toUpperCase() + word.slice(1);

/** Hands out company names and domains, each domain once (never a free-mail provider's). */
export function companyNamer(random: Random) {
  const taken = new Set<string>();
  return (suffix: string, kind: "company" | "coworking" = "company"): { name: string; domain: string } => {
    for (let n = 0; ; n++) {
      const stem = random.pick(STEMS);
      const trade = kind === "coworking" ? random.pick(["coworking", "workspace", "hub"]) : random.pick(TRADES);
      const label = `${stem}-${trade}${n >= 20 ? n : ""}`;
      const domain = `${label}.${suffix}`;
      if (taken.has(domain) || isFreeMail(domain)) continue;
      taken.add(domain);
      const legal = LEGAL_FORMS[suffix] ?? "Ltd";
      return { name: `${capital(stem)} ${capital(trade)}${n >= 20 ? ` ${n}` : ""} ${legal}`, domain };
    }
  };
}

/** The suffix a company near an operator whose site is `domain` would use: mostly the operator's country's, else .com. */
export function companySuffix(random: Random, operatorDomain: string): string {
  const suffix = getPublicSuffix(operatorDomain) ?? "com";
  return random.chance(0.7) ? suffix : "com";
}

export function personName(random: Random): { first: string; last: string } {
  return { first: random.pick(FIRST), last: random.pick(LAST) };
}

export const emailAt = (person: { first: string; last: string }, domain: string, random: Random) =>
  `${person.first}.${person.last}${random.chance(0.3) ? random.int(1, 99) : ""}@${domain}`;

export const USER_AGENTS = {
  desktop: [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0",
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0",
  ],
  mobile: [
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (Linux; Android 13; SM-S911B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Mobile Safari/537.36",
  ],
} as const;

// ---- reverse DNS names ----------------------------------------------------------------------

const dashed = (ip: string) => ip.replaceAll(".", "-");
const hexOf = (ip: string) => ip.split(".").map((o) => Number(o).toString(16).padStart(2, "0").toUpperCase()).join("");
const reversed = (ip: string) => ip.split(".").reverse().join(".");

/** How an operator names the addresses of a kind of line; `none`: no PTR records. */
export type PtrStyle = "dashed" | "hex" | "dotted" | "none";

/** An access line's name (dynamic pools, CGNAT): reads like one, and spells the address. */
export function accessLinePtr(ip: string, operatorDomain: string, style: PtrStyle): string | undefined {
  switch (style) {
    case "dashed":
      return `dyn-${dashed(ip)}.pool.${operatorDomain}`;
    case "hex":
      return `p${hexOf(ip)}.dip0.${operatorDomain}`;
    case "dotted":
      return `${reversed(ip)}.dsl.${operatorDomain}`;
    case "none":
      return undefined;
  }
}

/** A static business line's generic name given by the operator (not by the customer). */
export function staticGenericPtr(ip: string, operatorDomain: string, style: PtrStyle): string | undefined {
  switch (style) {
    case "dashed":
      return `static-${dashed(ip)}.business.${operatorDomain}`;
    case "hex":
      return `${hexOf(ip).toLowerCase()}.static.${operatorDomain}`;
    case "dotted":
      return `${reversed(ip)}.biz.${operatorDomain}`;
    case "none":
      return undefined;
  }
}

/** A name a company gives its own line (delegated reverse zone): `gw.mueller-bau.de`, `mail2.acme-tools.com`. */
export function ownPtr(domain: string, index: number, random: Random): string {
  const label = random.pick(["gw", "mail", "fw", "vpn", "office", "router", "mx", "remote"]);
  return `${label}${index ? index + 1 : ""}.${domain}`;
}

/** A mobile carrier's name for its addresses (many have none). */
export const mobilePtr = (ip: string, operatorDomain: string) => `${dashed(ip)}.mobile.${operatorDomain}`;

/** A cloud provider's names: AWS and Google Cloud name every address, Azure none. */
export function cloudPtr(ip: string, provider: string): string | undefined {
  if (/amazon/i.test(provider)) return `ec2-${dashed(ip)}.eu-west-1.compute.amazonaws.com`;
  if (/google/i.test(provider)) return `${reversed(ip)}.bc.googleusercontent.com`;
  return undefined;
}
