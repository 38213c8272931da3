// Mobile operators by name, from the MCC/MNC list (mcc-mnc-list, pinned: Wikipedia's "Mobile
// Network Codes" tables, MIT): an AS whose name is a mobile operator's is a mobile network, even
// when it has no keyword ("Safaricom", "Ncell", "Digicel Jamaica", "WOM S.A.") and sits in a few
// cities. Only the entries of national networks in operation count (the list also names test and
// private networks of equipment makers and enterprises: Ericsson, Airbus, BHP, Cisco).
// An AS name matches when, without case, punctuation and legal form (organisationKey):
//   - it is an operator's or a brand's name ("Safaricom Limited", "WOM S.A.");
//   - it starts with an operator's name of two or more words ("PT. Smartfren Telecom, Tbk"), or
//     with a one-word name that the list has in two or more countries (a group: "Vodafone
//     Portugal ...", "Ooredoo Tunisie");
//   - it is a brand followed by a country's name ("Yettel Hungary", "Digicel Trinidad and Tobago").
import { createRequire } from "node:module";
import type { Operator } from "mcc-mnc-list";

/** The name key of network-class.ts (passed in, so that this module needs nothing of it). */
export type NameKey = (name: string) => string;

export interface CarrierNames {
  /** The operator or brand name that `asName` matched, or undefined. */
  match(asName: string): string | undefined;
}

const require = createRequire(import.meta.url);

export function carrierNames(key: NameKey, entries: readonly Operator[] = (require("mcc-mnc-list") as { all(): Operator[] }).all()): CarrierNames {
  const live = entries.filter((e) => e.type === "National" && e.status === "Operational");
  const whole = new Map<string, string>();
  const prefixes = new Map<string, string>();
  const brands = new Map<string, string>();
  const countriesOf = new Map<string, Set<string>>();
  for (const e of live) {
    for (const name of [e.brand, e.operator]) {
      const k = name ? key(name) : "";
      if (!k) continue;
      whole.set(k, name);
      let countries = countriesOf.get(k);
      if (!countries) countriesOf.set(k, (countries = new Set()));
      countries.add(e.countryCode);
    }
    const brand = e.brand ? key(e.brand) : "";
    if (brand) brands.set(brand, e.brand);
  }
  for (const e of live) {
    const k = e.operator ? key(e.operator) : "";
    if (k.includes(" ")) prefixes.set(k, e.operator);
  }
  for (const [k, countries] of countriesOf) if (!k.includes(" ") && countries.size >= 2) prefixes.set(k, whole.get(k)!);
  const countryNames = new Set(entries.map((e) => (e.countryName ? key(e.countryName) : "")).filter(Boolean));

  return {
    match(asName) {
      const k = key(asName);
      if (!k) return undefined;
      const exact = whole.get(k);
      if (exact) return exact;
      const words = k.split(" ");
      for (let i = words.length - 1; i >= 1; i--) {
        const head = words.slice(0, i).join(" ");
        const prefix = prefixes.get(head);
        if (prefix) return prefix;
        const brand = brands.get(head);
        if (brand && countryNames.has(words.slice(i).join(" "))) return brand;
      }
      return undefined;
    },
  };
}
