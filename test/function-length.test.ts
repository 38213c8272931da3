// No function over MAX_LINES lines in server/ or scripts/ without a comment immediately above it
// that says why (docs/contributing.md): a reader holds a function of a screen or two in mind; past
// that, the comment says what keeps it in one piece. Functions are declarations, methods, arrow
// functions and function expressions, counted from the line they start on to the line they end on.
// The comment is the one above the statement the function begins on (`export const x = () => {`
// is commented above `export const`).
import { readFileSync } from "node:fs";
import path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { repositoryRoot, typeScriptFiles } from "./support/sources.ts";

/** A screen or two of code: the length the contributing guide asks a reason for beyond. */
const MAX_LINES = 80;

/** What a comment saying why a function is long contains (case-insensitive). */
const WHY_LONG = /long because|why long:/i;

/** Functions over the limit without their comment yet: `file:name`, with the reason. */
const EXCEPTIONS: readonly { function: string; reason: string }[] = [];

interface LongFunction {
  file: string;
  line: number;
  name: string;
  lines: number;
  explained: boolean;
}

function isFunction(node: ts.Node): node is ts.FunctionLikeDeclaration {
  return ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node) || ts.isArrowFunction(node) || ts.isFunctionExpression(node);
}

/** The node a comment above the function sits on: the outermost one starting on the function's line. */
function anchorOf(node: ts.Node, source: ts.SourceFile): ts.Node {
  const lineOf = (n: ts.Node) => source.getLineAndCharacterOfPosition(n.getStart(source)).line;
  let anchor = node;
  while (anchor.parent && !ts.isSourceFile(anchor.parent) && lineOf(anchor.parent) === lineOf(node)) anchor = anchor.parent;
  return anchor;
}

function nameOf(node: ts.FunctionLikeDeclaration, anchor: ts.Node): string {
  if (node.name) return node.name.getText();
  const named = [node.parent, anchor].find((n) => n && (ts.isVariableDeclaration(n) || ts.isPropertyAssignment(n) || ts.isPropertyDeclaration(n)));
  if (named && (ts.isVariableDeclaration(named) || ts.isPropertyAssignment(named) || ts.isPropertyDeclaration(named))) return named.name.getText();
  if (ts.isVariableStatement(anchor)) return anchor.declarationList.declarations[0]!.name.getText();
  return "(anonymous)";
}

/** Every function of one file's text longer than MAX_LINES, with whether a comment above says why. */
function longFunctionsIn(file: string, text: string): LongFunction[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: LongFunction[] = [];
  const visit = (node: ts.Node): void => {
    if (isFunction(node)) {
      const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const lines = source.getLineAndCharacterOfPosition(node.getEnd()).line - start + 1;
      if (lines > MAX_LINES) {
        const anchor = anchorOf(node, source);
        const comments = ts.getLeadingCommentRanges(text, anchor.getFullStart()) ?? [];
        const explained = comments.some((c) => WHY_LONG.test(text.slice(c.pos, c.end)));
        found.push({ file: path.relative(repositoryRoot, file), line: start + 1, name: nameOf(node, anchor), lines, explained });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

const longFunctions = ["server", "scripts"].flatMap((dir) => typeScriptFiles(path.join(repositoryRoot, dir))).flatMap((file) => longFunctionsIn(file, readFileSync(file, "utf8")));
const excepted = new Set(EXCEPTIONS.map((e) => e.function));
const keyOf = (f: LongFunction) => `${f.file}:${f.name}`;

describe("function length", () => {
  it(`when a function of server/ or scripts/ is over ${MAX_LINES} lines, then a comment above it says why`, () => {
    const unexplained = longFunctions.filter((f) => !f.explained && !excepted.has(keyOf(f)));
    expect(unexplained.map((f) => `${f.file}:${f.line} ${f.name} is ${f.lines} lines, with no "long because" / "Why long:" comment above it`)).toEqual([]);
  });

  it("when a function is listed as an exception, then it is still long and unexplained", () => {
    const waiting = new Set(longFunctions.filter((f) => !f.explained).map(keyOf));
    expect(EXCEPTIONS.filter((e) => !waiting.has(e.function)).map((e) => e.function)).toEqual([]);
  });

  it("when the checker reads a long arrow function, then it reports its line, name, length and comment", () => {
    const body = Array.from({ length: MAX_LINES }, (_, i) => `  const v${i} = ${i};`).join("\n");
    const sample = (comment: string) => longFunctionsIn(path.join(repositoryRoot, "server", "sample.ts"), `import x from "y";\n${comment}\nexport const long = () => {\n${body}\n};\n`);
    expect(sample("// Why long: one table of cases.")).toEqual([{ file: "server/sample.ts", line: 3, name: "long", lines: MAX_LINES + 2, explained: true }]);
    expect(sample("// A long list.")).toEqual([{ file: "server/sample.ts", line: 3, name: "long", lines: MAX_LINES + 2, explained: false }]);
  });
});
