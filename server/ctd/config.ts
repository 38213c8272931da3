// Configuration of custom tracking domains, from the environment (documented in README.md and
// in the spec's Custom Tracking Domains tag).
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Logger } from "../logging.ts";
import type { DnsSettings } from "./dns.ts";
import { isWithin, toAsciiHost } from "./hostname.ts";
import { newEncryptionKey, parseEncryptionKey } from "./secret-box.ts";
import { flag, positive } from "../env-values.ts";

export const LETS_ENCRYPT_PRODUCTION = "https://acme-v02.api.letsencrypt.org/directory";

export interface TrackingDomainConfig {
  /** The host every custom tracking domain must be a CNAME to. */
  cnameTarget: string;
  /** Our own domains: neither they nor their sub-domains can be a customer's tracking domain. */
  ownDomains: string[];
  acme: {
    directoryUrl: string;
    /** Contact e-mail given to the ACME account; never logged. */
    contactEmail?: string;
    /** Extra CA certificates (PEM) trusted for the ACME server, e.g. a test server's. */
    caPem?: string;
  };
  dns: DnsSettings;
  /** How long add and update wait for the outcome of certificate generation. */
  addWaitMs: number;
  /** AES-256 key for private keys at rest; required in production, elsewhere a development key stands in. */
  encryptionKey?: Buffer;
  production: boolean;
  /** Test-only: let ACME traffic reach loopback and private addresses. Refused in production. */
  allowPrivateAddresses: boolean;
  jobs: {
    /** A worker's claim on a job lasts this long unless renewed (a killed worker's job is picked up after it). */
    leaseMs: number;
    /** How often an idle worker looks for work, and a waiting request for an outcome. */
    pollMs: number;
    /** Attempts before a job fails for good. */
    maxAttempts: number;
    /** Delay before a failed attempt is tried again. */
    retryDelayMs: number;
  };
}

function host(name: string, value: string): string {
  const ascii = toAsciiHost(value);
  if (!ascii) throw new Error(`${name} must be a host name, got "${value}"`);
  return ascii;
}

function list(value: string | undefined): string[] {
  return (value ?? "").split(",").map((s) => s.trim()).filter(Boolean);
}

/** From the `CTD_*` variables; server/config.ts calls it once with the environment. */
export function loadTrackingDomainConfig(env: Record<string, string | undefined>): TrackingDomainConfig {
  const production = env.NODE_ENV === "production";
  const cnameTarget = host("CTD_CNAME_TARGET", env.CTD_CNAME_TARGET ?? "track.leadintel.io");
  const ownDomains = list(env.CTD_OWN_DOMAINS ?? "leadintel.io").map((d) => host("CTD_OWN_DOMAINS", d));
  // The target itself is always ours.
  if (!ownDomains.some((d) => isWithin(cnameTarget, d))) ownDomains.push(cnameTarget);
  const allowPrivateAddresses = flag(env.CTD_ALLOW_PRIVATE_ADDRESSES);
  if (allowPrivateAddresses && production) throw new Error("CTD_ALLOW_PRIVATE_ADDRESSES is for tests only and refused in production");
  const secondsMs = (name: string, fallback: number) => positive(env, name, fallback) * 1000;
  return {
    cnameTarget,
    ownDomains,
    acme: {
      directoryUrl: env.CTD_ACME_DIRECTORY_URL || LETS_ENCRYPT_PRODUCTION,
      contactEmail: env.CTD_ACME_EMAIL || undefined,
      caPem: env.CTD_ACME_CA_FILE ? readFileSync(env.CTD_ACME_CA_FILE, "utf8") : undefined,
    },
    dns: { servers: list(env.CTD_DNS_SERVERS), timeoutMs: positive(env, "CTD_DNS_TIMEOUT_MS", 2500), tries: 2 },
    addWaitMs: secondsMs("CTD_ADD_WAIT_SECONDS", 540),
    encryptionKey: env.CTD_ENCRYPTION_KEY ? parseEncryptionKey(env.CTD_ENCRYPTION_KEY) : undefined,
    production,
    allowPrivateAddresses,
    jobs: {
      leaseMs: secondsMs("CTD_JOB_LEASE_SECONDS", 60),
      pollMs: positive(env, "CTD_JOB_POLL_MS", 1000),
      maxAttempts: positive(env, "CTD_JOB_MAX_ATTEMPTS", 3),
      retryDelayMs: secondsMs("CTD_JOB_RETRY_SECONDS", 30),
    },
  };
}

export const DEV_KEY_FILE = path.resolve(".data/ctd-dev-encryption.key");

/**
 * The configured key, or outside production a development key generated once into DEV_KEY_FILE,
 * with a warning: keys sealed with it are only as safe as that file. The server resolves it at
 * start, so production refuses to start without CTD_ENCRYPTION_KEY.
 */
export function resolveEncryptionKey(config: TrackingDomainConfig, logger: Logger): Buffer {
  if (config.encryptionKey) return config.encryptionKey;
  if (config.production) throw new Error("CTD_ENCRYPTION_KEY is required in production (32 bytes: 64 hex or 44 base64 characters)");
  if (!existsSync(DEV_KEY_FILE)) {
    mkdirSync(path.dirname(DEV_KEY_FILE), { recursive: true });
    writeFileSync(DEV_KEY_FILE, newEncryptionKey().toString("hex"), { mode: 0o600 });
    chmodSync(DEV_KEY_FILE, 0o600);
  }
  logger.warn("CTD_ENCRYPTION_KEY is not set: private keys are encrypted with a development key", { file: DEV_KEY_FILE });
  return parseEncryptionKey(readFileSync(DEV_KEY_FILE, "utf8"));
}
