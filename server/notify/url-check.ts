// Which endpoint URLs are accepted (at create and update): http(s) only, https in production, no
// user information, and a host that is or resolves to public addresses only (the address guard
// of the tracking-domain code; checked again at every connection).
import { promises as dns } from "node:dns";
import net from "node:net";
import { isLoopbackName, isPublicAddress, normalHost } from "../security/address-guard.ts";
import { Invalid } from "../domain/errors.ts";

export interface UrlRules {
  requireHttps: boolean;
  allowPrivateAddresses: boolean;
}

const LOOKUP_TIMEOUT_MS = 3000;

/** The reason the URL is refused, or undefined. A name that does not resolve (yet) is accepted: delivery checks again. */
async function problemOf(raw: string, rules: UrlRules): Promise<string | undefined> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return "is not an absolute URL";
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return "must be an https URL";
  if (url.protocol === "http:" && rules.requireHttps) return "must be an https URL (plain http is refused in production)";
  if (url.username || url.password) return "must not carry user information";
  if (url.hash) return "must not have a fragment";
  if (rules.allowPrivateAddresses) return undefined;
  // the guard's own spelling and rules, as at every connection of a delivery
  const host = normalHost(url.hostname);
  if (net.isIP(host)) return isPublicAddress(host) ? undefined : "is a non-public address (loopback, private, link-local, ...)";
  if (isLoopbackName(host)) return "is a non-public address (loopback, private, link-local, ...)";
  const addresses = await Promise.race([
    dns.lookup(host, { all: true }).catch(() => []),
    new Promise<{ address: string }[]>((resolve) => setTimeout(() => resolve([]), LOOKUP_TIMEOUT_MS).unref()),
  ]);
  return addresses.some((a) => !isPublicAddress(a.address)) ? "resolves to a non-public address (loopback, private, link-local, ...)" : undefined;
}

/** Throws 400 `invalid_webhook_url` with one detail on `url` when the URL is refused. */
export async function checkWebhookUrl(raw: string, rules: UrlRules): Promise<void> {
  const problem = await problemOf(raw, rules);
  if (problem) {
    throw new Invalid(`The endpoint URL ${problem}`, [{ location: "body", field: "url", message: problem }], "invalid_webhook_url");
  }
}
