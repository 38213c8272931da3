// What bench:match prints: the world's sizes, the breakdown per kind of visitor, the figures with
// their numerators and denominators, and the targets' verdicts.
import { type Evaluation, type Ratio, ratio, type Tally, verdicts } from "./evaluate.ts";
import { ROWS } from "./truth.ts";
import { isFreeMail } from "./names.ts";
import type { World } from "./world.ts";

export const count = (n: number) => n.toLocaleString("en");
const percent = (r: Ratio, digits = 1) => {
  const value = ratio(r);
  return value === undefined ? "n/a" : `${(100 * value).toFixed(digits)}%`;
};
const fraction = (r: Ratio, digits = 1) => `${count(r.numerator)} / ${count(r.denominator)} = ${percent(r, digits)}`;

export function describeWorld(world: World): string[] {
  const orgsOf = (kind: string) => world.orgs.filter((o) => o.kind === kind).length;
  const lines = [...world.fixedLines.values()].filter((l) => l.kind === "static");
  const slash24s = new Set(lines.map((l) => l.address.slice(0, l.address.lastIndexOf(".")))).size;
  const ptrOf = (ptr: string) => new Set(lines.filter((l) => l.ptr === ptr).map((l) => l.orgId)).size;
  const people = new Map<string, number>();
  for (const p of world.people) people.set(p.kind, (people.get(p.kind) ?? 0) + 1);
  const businessForms = world.forms.filter((f) => !isFreeMail(f.domain)).length;
  const spaces = [...world.fixedLines.values()].filter((l) => l.kind === "coworking").length;
  const midway = world.declarations.filter((d) => d.when === "midway").length;
  return [
    `world: ${count(world.orgs.length)} organisations: ${orgsOf("own_as")} on their own AS, ${orgsOf("static")} on static lines of ISPs ` +
      `on ${slash24s} /24s (${ptrOf("own")} with PTR names under their own domain, ${ptrOf("generic")} generic ISP names, ${ptrOf("none")} none), ` +
      `${orgsOf("coworking_member")} in ${spaces} coworking spaces`,
    `       ${count(world.people.length)} people: ${[...people].map(([k, n]) => `${k.replace("_", " ")} ${count(n)}`).join(", ")}`,
    `       ${world.options.days} days, ${count(world.sessions.length)} sessions, ${count(world.visits.length)} page views, ` +
      `${count(world.forms.length)} forms (${count(businessForms)} with an organisation's domain), ` +
      `${world.declarations.length} declared networks (${world.declarations.length - midway} before the traffic, ${midway} halfway), ${count(world.ptr.size)} PTR names`,
  ];
}

function tallyRow(name: string, t: Tally): string {
  const cells = [t.visits, t.attributed, t.right, t.knowable, t.knowableRight, t.beforeEvidence, t.beforeEvidenceRight].map(count);
  return `| ${name} | ${cells.join(" | ")} |`;
}

export function describeEvaluation(e: Evaluation): string[] {
  const table = [
    "| visitors | visits | attributed | right organisation | knowable | knowable, right | knowable only from later evidence | of those, right |",
    "|---|---:|---:|---:|---:|---:|---:|---:|",
    ...ROWS.map((row) => tallyRow(row, e.rows[row])),
    tallyRow("**business**", e.business),
    tallyRow("**not business**", e.other),
  ];
  const verdict = new Map(verdicts(e.figures).map((v) => [v.name, `target ${v.target}: ${v.met ? "met" : "MISSES"}`]));
  const figure = (name: string, r: Ratio, what: string, digits = 1) => `${name.padEnd(15)} ${fraction(r, digits).padEnd(28)} ${verdict.get(name) ?? ""}\n${" ".repeat(16)}(${what})`;
  return [
    ...table,
    "",
    figure("match rate", e.figures.matchRate, "business visits attributed to the right organisation / all business visits"),
    figure("precision", e.figures.precision, "visits attributed to the right organisation / all attributed visits"),
    figure("consumer leak", e.figures.leak, "home office, consumer, CGNAT, mobile and cloud visits attributed to any organisation / those visits", 2),
    figure("knowable match", e.figures.knowableMatch, "knowable business visits attributed to the right organisation / knowable business visits"),
    ...(e.wrong.length ? ["", "wrong attributions (visits; row -> lead):", ...e.wrong.slice(0, 8).map(([key, n]) => `  ${count(n).padStart(6)}  ${key}`)] : []),
  ];
}
