// Custom tracking domains in tests: configuration through the same environment variables as the
// service (so a child process can be given the very same), a worker, and datasets with domains.
import type { Config } from "../../server/config.ts";
import { newEncryptionKey } from "../../server/security/secret-box.ts";
import { testConfig } from "./config.ts";
import type { Services } from "../../server/services/index.ts";
import type { Tenant } from "./tenants.ts";
import * as datasets from "../../server/services/datasets.ts";

export const TARGET = "track.leadintel.test";
/** Given to the ACME account in every test: it must never appear in a log line. */
export const ACME_CONTACT = "certificates@leadintel.test";

/** The environment of a test instance of the service; `dnsServer` answers its CNAME checks. */
export function trackingDomainEnv(dnsServer: string, overrides: Record<string, string> = {}): Record<string, string> {
  return {
    CTD_CNAME_TARGET: TARGET,
    CTD_OWN_DOMAINS: "leadintel.test",
    CTD_DNS_SERVERS: dnsServer,
    CTD_DNS_TIMEOUT_MS: "2000", // the DNS server runs in the test's process: a busy machine delays its answers
    CTD_ACME_DIRECTORY_URL: "https://127.0.0.1:9/dir", // overridden where an ACME server runs
    CTD_ACME_EMAIL: ACME_CONTACT,
    CTD_ADD_WAIT_SECONDS: "60",
    CTD_ENCRYPTION_KEY: newEncryptionKey().toString("hex"),
    CTD_ALLOW_PRIVATE_ADDRESSES: "1", // the test servers live on loopback
    CTD_JOB_LEASE_SECONDS: "3",
    JOB_POLL_MS: "50",
    CTD_JOB_RETRY_SECONDS: "0.1",
    ...overrides,
  };
}

/** The test configuration (test/support/config.ts) with the environment above. */
export function trackingDomainConfig(dnsServer: string, overrides: Record<string, string> = {}): Config {
  return testConfig(trackingDomainEnv(dnsServer, overrides));
}

let counter = 0;
/** A label no test has used yet, for unique domains and dataset names. */
export function fresh(what = "d"): string {
  return `${what}${++counter}x${Math.random().toString(36).slice(2, 7)}`;
}

/** A new dataset of `tenant`, with the website domain given (or none). */
export function datasetWithDomain(services: Services, tenant: Tenant, domain?: string): Promise<string> {
  return datasets.create(services, tenant.accountId, tenant.admin.email, { name: fresh("Site "), domain });
}
