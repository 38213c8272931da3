import { defineConfig } from "vitest/config";

// TEST_REPORT_FILE (set by .ci/run) adds a JSON report from which CI prints its closing count.
const reportFile = process.env.TEST_REPORT_FILE;

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    reporters: reportFile ? ["default", ["json", { outputFile: reportFile }]] : ["default"],
  },
});
