// Mobile operators by name, from the MCC/MNC list (mcc-mnc-list, pinned: Wikipedia's "Mobile
// Network Codes" tables, MIT): an AS whose name is a mobile operator's is a mobile network, even
// when it has no keyword ("Safaricom", "Ncell", "Digicel Jamaica", "WOM S.A.") and sits in a few
// cities. Only the entries of national networks in operation count (the list also names test and
// private networks of equipment makers and enterprises: Ericsson, Airbus, BHP, Cisco), and of those
// neither test networks (Nokia's), nor public bodies' own networks (a ministry's, police, railway:
// PUBLIC_BODY), nor operator names that are regions (India's circles: the list gives "Assam" or
// "Andhra Pradesh" as Jio's and Reliance's operator; REGIONAL_OPERATORS names per brand).
// An AS name matches when, without case, punctuation and legal form (organisationKey):
//   - it is an operator's or a brand's name ("Safaricom Limited", "WOM S.A.");
//   - it starts with an operator's name of two or more words ("PT. Smartfren Telecom, Tbk");
//   - it is a brand or operator name followed by a country's name ("Yettel Hungary", "Digicel
//     Trinidad and Tobago", "Vodafone Ireland").
// A one-word name followed by anything else does not match: the list's one-word names ("One",
// "Free", "Smart", "JT", "Epic") begin many enterprises' names ("Smart City Networks", "JT
// International", "Epic Systems"). When the AS's country is known (the country holding most of
// its addresses), the name matches only an operator of that country: "Mattel" is Mauritania's
// operator, and Mattel, Inc.'s network in the United States is not it.
import { createRequire } from "node:module";
import type { Operator } from "mcc-mnc-list";

/** The name key of network-class.ts (passed in, so that this module needs nothing of it). */
export type NameKey = (name: string) => string;

export interface CarrierNames {
  /** The operator or brand name that `asName` matched, or undefined; with `country` (ISO code),
   * only an operator of that country matches. */
  match(asName: string, country?: string): string | undefined;
}

/** A name's operators: the name as the list gives it and the countries it operates in. */
interface Named {
  name: string;
  countries: Set<string>;
}

const require = createRequire(import.meta.url);

/** Names of public bodies' own radio networks, which are no carriers of the public's traffic. */
const PUBLIC_BODY = /\b(ministry|ministerio|government|gouvernement|defen[cs]e|police|army|military|railways?)\b/i;
/** A brand with this many operator names in one country lists regions as its operators. */
const REGIONAL_OPERATORS = 4;

/** The list's entries whose names count (see the file's head). */
function carrierEntries(entries: readonly Operator[]): { names: string[]; operator: string | undefined; country: string }[] {
  const live = entries.filter((e) => e.type === "National" && e.status === "Operational" && !/test network/i.test(e.notes ?? ""));
  const operatorsOfBrand = new Map<string, Set<string>>();
  for (const e of live) {
    const brand = `${e.countryCode}|${e.brand ?? ""}`;
    if (!operatorsOfBrand.has(brand)) operatorsOfBrand.set(brand, new Set());
    operatorsOfBrand.get(brand)!.add(e.operator);
  }
  return live.map((e) => {
    const regional = Boolean(e.brand) && operatorsOfBrand.get(`${e.countryCode}|${e.brand}`)!.size >= REGIONAL_OPERATORS;
    const operator = regional ? undefined : e.operator || undefined;
    const names = [e.brand, operator].filter((name): name is string => Boolean(name) && !PUBLIC_BODY.test(name!));
    // "GE-AB" (Abkhazia) is in Georgia's address space: DB-IP places addresses by ISO country
    return { names, operator: operator && !PUBLIC_BODY.test(operator) ? operator : undefined, country: e.countryCode.slice(0, 2) };
  });
}

export function carrierNames(key: NameKey, entries: readonly Operator[] = (require("mcc-mnc-list") as { all(): Operator[] }).all()): CarrierNames {
  const whole = new Map<string, Named>();
  const prefixes = new Map<string, Named>();
  const add = (map: Map<string, Named>, k: string, name: string, country: string) => {
    const named = map.get(k) ?? { name, countries: new Set<string>() };
    named.name = name; // the operator's name over the brand's, as listed after it
    named.countries.add(country);
    map.set(k, named);
  };
  for (const { names, operator, country } of carrierEntries(entries)) {
    for (const name of names) {
      const k = key(name);
      if (k) add(whole, k, name, country);
    }
    const k = operator ? key(operator) : "";
    if (k.includes(" ")) add(prefixes, k, operator!, country);
  }
  const countryNames = new Set(entries.map((e) => (e.countryName ? key(e.countryName) : "")).filter(Boolean));

  return {
    match(asName, country) {
      const k = key(asName);
      if (!k) return undefined;
      const inCountry = (named: Named | undefined) => (named && (!country || named.countries.has(country)) ? named.name : undefined);
      const exact = inCountry(whole.get(k));
      if (exact) return exact;
      const words = k.split(" ");
      for (let i = words.length - 1; i >= 1; i--) {
        const head = words.slice(0, i).join(" ");
        const prefix = inCountry(prefixes.get(head));
        if (prefix) return prefix;
        const named = inCountry(whole.get(head));
        if (named && countryNames.has(words.slice(i).join(" "))) return named;
      }
      return undefined;
    },
  };
}
