// Host-name rules of a custom tracking domain: what can be checked without the network.
import { isIP } from "node:net";
import { domainToASCII } from "node:url";

export interface Check {
  name: string;
  ok: boolean;
  message: string;
}

export interface HostnameContext {
  /** The dataset's website host name, when it has one: the tracking domain must be a sub-domain of it. */
  datasetDomain?: string | null;
  /** Our own domains (and their sub-domains), refused. */
  reservedDomains: readonly string[];
}

export interface HostnameVerdict {
  /** The ASCII (punycode) lower-case form without a trailing dot; undefined when it has none. */
  ascii?: string;
  checks: Check[];
}

const label = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const MAX_LENGTH = 253;

/** The ASCII form of a host name (IDN to punycode, lower case, no trailing dot), or undefined. */
export function toAsciiHost(input: string): string | undefined {
  const trimmed = input.trim().replace(/\.$/, "");
  if (!trimmed || /[\s/:@?#%[\]\\]/.test(trimmed)) return undefined;
  return domainToASCII(trimmed) || undefined;
}

/** True when `host` is `domain` or one of its sub-domains. */
export function isWithin(host: string, domain: string): boolean {
  return host === domain || host.endsWith(`.${domain}`);
}

/** Why the name cannot be a host name, or undefined when it can. */
function syntaxProblem(input: string, ascii: string | undefined): string | undefined {
  if (ascii === undefined) return `"${input}" is not a valid host name: use letters, digits and hyphens, like t.example.com`;
  if (isIP(ascii) || /^[0-9]+$/.test(ascii.split(".").at(-1)!)) return `"${input}" is an IP address; use a host name such as t.example.com`;
  if (ascii.length > MAX_LENGTH) return `"${input}" is ${ascii.length} characters long in ASCII form; at most ${MAX_LENGTH} are allowed`;
  const labels = ascii.split(".");
  const bad = labels.find((l) => !label.test(l));
  if (bad !== undefined) {
    if (bad === "") return `"${input}" has an empty part (two dots in a row, or a leading dot)`;
    return bad.length > 63
      ? `The part "${bad}" is longer than 63 characters`
      : `The part "${bad}" is not allowed: each part of the name uses letters, digits and hyphens, and neither starts nor ends with a hyphen`;
  }
  if (labels.length < 3) {
    return `"${input}" is not a sub-domain: a CNAME record cannot be placed on a domain's apex; use a name such as t.${ascii}`;
  }
  return undefined;
}

/** The dataset's site domain: its website host without a leading `www.`. */
function siteDomain(datasetDomain: string): string | undefined {
  const ascii = toAsciiHost(datasetDomain);
  return ascii?.replace(/^www\./, "");
}

/**
 * Applies the rules in order; the checks after a failed `hostname` are not run (they need a valid
 * name). Every message says what to do.
 */
export function checkHostname(input: string, context: HostnameContext): HostnameVerdict {
  const ascii = toAsciiHost(input);
  const problem = syntaxProblem(input, ascii);
  if (problem || !ascii) return { checks: [{ name: "hostname", ok: false, message: problem! }] };
  const converted = ascii !== input.trim().toLowerCase().replace(/\.$/, "");
  const message = `${ascii} is a valid host name.${converted ? ` It is ${input} written in ASCII.` : ""}`;
  const checks: Check[] = [{ name: "hostname", ok: true, message }];

  const site = context.datasetDomain ? siteDomain(context.datasetDomain) : undefined;
  checks.push(
    !site
      ? { name: "dataset_domain", ok: true, message: "The dataset has no website domain, so any domain you control is accepted." }
      : ascii.endsWith(`.${site}`)
        ? { name: "dataset_domain", ok: true, message: `${ascii} is a sub-domain of the dataset's website domain ${site}.` }
        : {
            name: "dataset_domain",
            ok: false,
            message: `${ascii} is not a sub-domain of the dataset's website domain ${site}: use a name such as t.${site}, so that tracking stays first-party.`,
          },
  );

  const reserved = context.reservedDomains.find((d) => isWithin(ascii, d));
  checks.push(
    reserved
      ? { name: "reserved", ok: false, message: `${ascii} belongs to our own domain ${reserved}; use a sub-domain of your website's domain.` }
      : { name: "reserved", ok: true, message: `${ascii} is not one of our own domains.` },
  );
  return { ascii, checks };
}
