// The suite's tiers, by what a test file needs (vitest.config.ts makes one vitest project of
// each; test/tiers.test.ts fails when a test file is in none or in two):
// - unit: no database, no process: the modules alone;
// - api: the app on a database, in this process (PGlite, or PostgreSQL with TEST_DATABASE_URL);
// - process: starts the service or a CLI as a child process;
// - external: needs a server from outside the project: NATS (and its 3-node cluster), pebble,
//   Chromium or Redis (skipped when missing, except in CI).
// `npm run test:quick` runs unit and api; `npm test` all four.
export const TIERS = {
  unit: [
    "bench-match",
    "client-types",
    "config",
    "demo-banner",
    "function-length",
    "generated-types",
    "host-domains",
    "identity-rules",
    "layers",
    "network-classification",
    "operator-domains",
    "operator-ptr-formats",
    "readme",
    "secret-box",
    "spec-examples",
    "start-up-waits",
    "table-owners",
    "tiers",
    "tracking-resolution",
    "vpn-networks",
  ],
  api: [
    "auth",
    "bulk-lookup",
    "client",
    "collector-robustness",
    "contract",
    "contract-rules",
    "credit-reports",
    "custom-tracking-domains", // no pebble: only its free-port helper
    "database-faults",
    "datasets",
    "dead-letter-privacy",
    "declared-attribution",
    "declared-networks",
    "demo",
    "domain-evidence",
    "education-networks",
    "embedded-database",
    "errors",
    "exclusion-notifications",
    "fuzz",
    "government-networks",
    "hermetic-dns",
    "identities",
    "ingest-metrics",
    "input-robustness", // runs python3 once to check a pattern, no service or CLI
    "invitations",
    "jobs",
    "jobs-pgboss", // pg-boss 10 on the test database: why the queue is not pg-boss
    "key-cache",
    "lead-operations",
    "lead-removed",
    "lead-score",
    "leads",
    "lookup",
    "mail",
    "network-overrides",
    "operator",
    "pending-identities",
    "privacy",
    "privacy-concurrent",
    "rate-limit",
    "received-at",
    "retention",
    "segment-alerts",
    "segment-preferences",
    "segments",
    "spec-valid-requests",
    "tracking",
    "tracking-capture",
    "transport", // runs openssl once for a certificate, no service or CLI
    "user-datasets",
    "users",
    "users-list",
    "visit-range-index",
    "webhook-address-guard",
    "webhooks",
  ],
  process: [
    "admin-cli",
    "bench-load-agent",
    "client-package",
    "cluster", // node:cluster workers of one service process, not the NATS cluster
    "contacts",
    "database",
    "first-start",
    "ingest-process",
    "operator-cli",
    "shutdown",
    "webhooks-restart",
  ],
  external: [
    "consent-browser",
    "custom-tracking-domains-acme",
    "custom-tracking-domains-restart",
    "demo-page",
    "docs",
    "ingest-dead-letters",
    "ingest-jetstream-cluster",
    "ingest-jetstream",
    "privacy-jetstream",
    "scale-out",
    "tracking-browser",
  ],
} as const satisfies Record<string, readonly string[]>;

export type Tier = keyof typeof TIERS;

/**
 * Files outside the unit tier that open no database: CI runs them once (on PGlite), not again on
 * PostgreSQL. admin-cli's commands fail before reaching one (an address nothing answers on).
 */
export const WITHOUT_DATABASE: readonly string[] = ["admin-cli", "bench-load-agent"];

/** The path vitest matches for a file named in TIERS. */
export const testFile = (name: string): string => `test/${name}.test.ts`;
