// All configuration comes from the environment; defaults give the zero-setup embedded mode.
import path from "node:path";

export interface DatabaseConfig {
  /** A PostgreSQL URL; when absent the embedded PGlite database in `dataDir` is used. */
  url?: string;
  /** Embedded database directory; undefined means in memory (tests). */
  dataDir?: string;
}

export interface RateLimitConfig {
  /** Requests one API key may make per window. */
  requests: number;
  windowSeconds: number;
  /** Shared store of all instances; without it each instance counts on its own. */
  redis?: { url: string; keyPrefix: string };
}

export interface LimitsConfig {
  /** Largest request body (413 beyond). */
  bodyBytes: number;
  /** Longest request target, path and query (400 `url_too_long` beyond). */
  urlLength: number;
  /** node's maxHeaderSize: request line and headers together (431 beyond, answered by node). */
  headerBytes: number;
}

export interface TimeoutsConfig {
  /** Time to receive the complete request headers. */
  headersMs: number;
  /** Time to receive the complete request (408 beyond, answered by node). */
  requestMs: number;
  /** How long an idle keep-alive connection stays open; keep it above the load balancer's idle timeout. */
  keepAliveMs: number;
  /** On SIGTERM: how long in-flight requests may take before their connections are closed. */
  shutdownMs: number;
}

export interface Config {
  port: number;
  host: string;
  production: boolean;
  /** Validate every response against the spec (on outside production). */
  validateResponses: boolean;
  logLevel: "debug" | "info" | "warn" | "error" | "silent";
  /** Create the demo account and print a demo key at start (off in production). */
  seedDemo: boolean;
  database: DatabaseConfig;
  rateLimit: RateLimitConfig;
  limits: LimitsConfig;
  timeouts: TimeoutsConfig;
  /** Terminate TLS in this process (both files, PEM). */
  tls?: { certFile: string; keyFile: string };
  /** Express's `trust proxy`: which proxies' X-Forwarded-* headers to believe. */
  trustProxy: boolean | number | string;
  /** Refuse plain-HTTP partner requests with 403 `https_required` (on in production). */
  requireHttps: boolean;
}

function flag(value: string | undefined, fallback: boolean): boolean {
  if (value === undefined || value === "") return fallback;
  return ["1", "true", "yes", "on"].includes(value.toLowerCase());
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 1): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) throw new Error(`${name} must be an integer of at least ${min}, got "${raw}"`);
  return value;
}

/** `true`/`false`, a hop count, or what express accepts as a list (`loopback`, `10.0.0.0/8, 127.0.0.1`). */
function trustProxy(value: string | undefined): boolean | number | string {
  if (value === undefined || value === "" || /^(false|0|no|off)$/i.test(value)) return false;
  if (/^(true|yes|on)$/i.test(value)) return true;
  return /^\d+$/.test(value) ? Number(value) : value;
}

function tls(env: NodeJS.ProcessEnv): Config["tls"] {
  const { TLS_CERT_FILE: certFile, TLS_KEY_FILE: keyFile } = env;
  if (!certFile && !keyFile) return undefined;
  if (!certFile || !keyFile) throw new Error("TLS_CERT_FILE and TLS_KEY_FILE must be given together");
  return { certFile: path.resolve(certFile), keyFile: path.resolve(keyFile) };
}

function timeouts(env: NodeJS.ProcessEnv): TimeoutsConfig {
  const result = {
    headersMs: integer(env, "HEADERS_TIMEOUT_MS", 20_000),
    requestMs: integer(env, "REQUEST_TIMEOUT_MS", 60_000),
    keepAliveMs: integer(env, "KEEP_ALIVE_TIMEOUT_MS", 5_000),
    shutdownMs: integer(env, "SHUTDOWN_TIMEOUT_MS", 10_000),
  };
  // node refuses a headers timeout longer than the request timeout
  if (result.headersMs > result.requestMs) throw new Error("HEADERS_TIMEOUT_MS must not exceed REQUEST_TIMEOUT_MS");
  return result;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const production = env.NODE_ENV === "production";
  const port = Number(env.PORT ?? 3000);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`PORT must be a port number, got "${env.PORT}"`);
  const logLevel = (env.LOG_LEVEL ?? "info") as Config["logLevel"];
  if (!["debug", "info", "warn", "error", "silent"].includes(logLevel)) throw new Error(`LOG_LEVEL must be debug|info|warn|error|silent`);
  return {
    port,
    host: env.HOST ?? "127.0.0.1",
    production,
    validateResponses: flag(env.VALIDATE_RESPONSES, !production),
    logLevel,
    seedDemo: flag(env.SEED_DEMO, !production),
    database: env.DATABASE_URL
      ? { url: env.DATABASE_URL }
      : { dataDir: path.resolve(env.DATA_DIR ?? ".data/pglite") },
    rateLimit: {
      requests: integer(env, "RATE_LIMIT_REQUESTS", 600),
      windowSeconds: integer(env, "RATE_LIMIT_WINDOW_SECONDS", 60),
      redis: env.REDIS_URL ? { url: env.REDIS_URL, keyPrefix: env.REDIS_KEY_PREFIX ?? "lead-intel:" } : undefined,
    },
    limits: {
      bodyBytes: integer(env, "BODY_LIMIT_BYTES", 1_048_576),
      urlLength: integer(env, "MAX_URL_LENGTH", 4096),
      headerBytes: integer(env, "MAX_HEADER_BYTES", 16_384),
    },
    timeouts: timeouts(env),
    tls: tls(env),
    trustProxy: trustProxy(env.TRUST_PROXY),
    requireHttps: flag(env.REQUIRE_HTTPS, production),
  };
}
