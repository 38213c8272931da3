// Every test file belongs to exactly one tier (test/tiers.ts), so that `npm run test:quick` and
// CI's per-database runs leave none out.
import { readdirSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { TIERS, WITHOUT_DATABASE } from "./tiers.ts";

const testNames = readdirSync(import.meta.dirname)
  .filter((f) => f.endsWith(".test.ts"))
  .map((f) => path.basename(f, ".test.ts"))
  .sort();

/** The names in no tier, in two or more, and those named that are no test file. */
function assignmentProblems(files: readonly string[], tiers: Record<string, readonly string[]>) {
  const named = Object.values(tiers).flat();
  return {
    unassigned: files.filter((f) => !named.includes(f)),
    inTwoTiers: [...new Set(named.filter((f, i) => named.indexOf(f) !== i))],
    notAFile: named.filter((f) => !files.includes(f)),
  };
}

describe("test tiers", () => {
  it("when the test folder is listed, then every file is in exactly one tier and every name is a file", () => {
    expect(assignmentProblems(testNames, TIERS)).toEqual({ unassigned: [], inTwoTiers: [], notAFile: [] });
    expect(WITHOUT_DATABASE.filter((f) => TIERS.unit.includes(f as never) || !testNames.includes(f))).toEqual([]);
  });

  it("when a file is in no tier, in two or names none, then the check says which", () => {
    expect(assignmentProblems(["a", "b", "c"], { unit: ["a", "x"], api: ["a"] })).toEqual({
      unassigned: ["b", "c"],
      inTwoTiers: ["a"],
      notAFile: ["x"],
    });
  });
});
