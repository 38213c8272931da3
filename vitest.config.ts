import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";
import { testFile, TIERS, type Tier } from "./test/tiers.ts";

// TEST_REPORT_FILE (set by .ci/run) adds a JSON report from which CI prints its closing count.
const reportFile = process.env.TEST_REPORT_FILE;

// What every tier's files share. Not `extends: true`: a project that extends the root config
// would run the global set-up once more (vitest runs it per project and for the root).
const perFile = {
  // generous: the first test of a worker also loads the IP data, which a busy machine makes slow
  testTimeout: 90_000,
  // a file's set-up (a database, an app, tenants) took over 120 s beside other work on 2 cores
  hookTimeout: 300_000,
  // A worker runs its files one after the other in one process, importing the server's modules
  // once rather than once per file (they take 1 to 4 s to load). Each file still makes its own
  // database, app and services; what modules share is the compiled contract and the IP data.
  isolate: false,
};

/** The tiers whose tests start the service or a CLI: they run the build (test/support/build.ts). */
const startsBuiltCode: readonly Tier[] = ["process", "external"];

/** One vitest project per tier (test/tiers.ts): `vitest run --project unit --project api`. */
const tierProject = (tier: Tier) => ({
  test: {
    name: tier,
    include: TIERS[tier].map(testFile),
    globalSetup: startsBuiltCode.includes(tier) ? ["test/support/build.ts"] : [],
    ...perFile,
  },
});

export default defineConfig({
  test: {
    // runs once per run, whichever tiers run (test/support/global-setup.ts)
    globalSetup: ["test/support/global-setup.ts"],
    projects: (Object.keys(TIERS) as Tier[]).map(tierProject),
    // Most test files spend their time waiting (child processes starting, servers, mail, time
    // bounds), not computing: at least 4 files at once, also where vitest's default (cores - 1)
    // would run them one by one (a 2-core machine). TEST_WORKERS overrides.
    maxWorkers: Number(process.env.TEST_WORKERS) || Math.max(availableParallelism() - 1, 4),
    reporters: reportFile ? ["default", ["json", { outputFile: reportFile }]] : ["default"],
  },
});
