// The README's first screen (issue 38 item 10): a person who opens it in a terminal sees what the
// service is, the two commands, the port and what to open, before the long table.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

/** A terminal's first screen: 100 columns, 40 rows. */
const COLUMNS = 100;
const ROWS = 40;

/** The README's lines that fit in the first screen, long lines taking the rows they wrap to. */
function firstScreen(text: string): string[] {
  const shown: string[] = [];
  let rows = 0;
  for (const line of text.split("\n")) {
    rows += Math.max(1, Math.ceil(line.length / COLUMNS));
    if (rows > ROWS) break;
    shown.push(line);
  }
  return shown;
}

describe("README.md", () => {
  it("when it is opened in a 100-column terminal, then its first screen says what it is, the two commands, the port and what to open", () => {
    const screen = firstScreen(readFileSync("README.md", "utf8"));
    const text = screen.join("\n");
    expect(screen.some((line) => /^npm ci\b/.test(line))).toBe(true);
    expect(screen.some((line) => /^npm start\b/.test(line))).toBe(true);
    expect(text).toContain("http://127.0.0.1:3000/");
    expect(text).toMatch(/leads/);
    expect(text).toContain("export B=");
    // no line of its text wraps (the table's long rows come after it)
    expect(screen.filter((line) => !line.startsWith("|") && line.length > COLUMNS)).toEqual([]);
  });
});
