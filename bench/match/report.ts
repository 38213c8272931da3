// What bench:match prints: the world's sizes, the breakdown per kind of visitor, the figures with
// their numerators and denominators, and the targets' verdicts.
import { type Evaluation, type Ratio, ratio, type Tally, verdicts } from "./evaluate.ts";
import { ROWS } from "./truth.ts";
import { isFreeMail } from "./names.ts";
import type { Site, World } from "./world.ts";

export const count = (n: number) => n.toLocaleString("en");
const percent = (r: Ratio, digits = 1) => {
  const value = ratio(r);
  return value === undefined ? "n/a" : `${(100 * value).toFixed(digits)}%`;
};
const fraction = (r: Ratio, digits = 1) => `${count(r.numerator)} / ${count(r.denominator)} = ${percent(r, digits)}`;

export function describeWorld(world: World): string[] {
  const orgsOf = (kind: string) => world.orgs.filter((o) => o.kind === kind).length;
  const sitesOf = (kind: Site["kind"]) => world.sites.filter((s) => s.kind === kind);
  const byNaming = (sites: Site[]) => tallyBy(sites, (s) => s.naming);
  const hosts = sitesOf("host");
  const people = tallyBy(world.people, (p) => p.kind.replace("_", " "));
  const businessForms = world.forms.filter((f) => !isFreeMail(f.domain)).length;
  const v6Views = world.visits.filter((v) => v.family === 6).length;
  const midway = world.declarations.filter((d) => d.when === "midway").length;
  const pools = world.declarations.filter((d) => d.consumerPool).length;
  const operators = [...world.operators].map(([asn, n]) => `AS${asn} ${n.zone} (business ${n.businessZone}; households ${n.access}, business lines ${n.business})`);
  return [
    `world (${world.options.mix}, seed ${world.options.seed}): ${count(world.orgs.length)} organisations: ${orgsOf("own_as")} on their own AS, ` +
      `${orgsOf("static")} on static lines (PTR: ${byNaming(sitesOf("static"))}), ${orgsOf("tenant")} tenants of ${hosts.length} hosts ` +
      `(${tallyBy(hosts, (h) => h.host!)}; PTR: ${byNaming(hosts)}), ${sitesOf("static").filter((s) => s.v6).length + hosts.filter((s) => s.v6).length} sites with an IPv6 /48`,
    `       access operators: ${operators.join("; ")}`,
    `       ${count(world.people.length)} people: ${people}`,
    `       ${world.options.days} days, ${count(world.sessions.length)} sessions, ${count(world.visits.length)} page views (${count(v6Views)} on IPv6), ` +
      `${count(world.forms.length)} forms (${count(businessForms)} with an organisation's domain), ` +
      `${world.declarations.length} declared networks (${world.declarations.length - midway} before the traffic, ${midway} halfway, ${pools} a household pool), ${count(world.ptr.size)} PTR names`,
    ...world.others.map((o) => `       another partner's website, the same people (not measured): ${o.site}, ${count(o.visits.length)} page views, ` +
      `${count(o.forms.length)} forms (${count(o.forms.filter((f) => !isFreeMail(f.domain)).length)} with an organisation's domain)`),
  ];
}

/** `a 3, b 2`: how many items have each key, in the order first seen. */
function tallyBy<T>(items: readonly T[], key: (item: T) => string): string {
  const counts = new Map<string, number>();
  for (const item of items) counts.set(key(item), (counts.get(key(item)) ?? 0) + 1);
  return [...counts].map(([k, n]) => `${k} ${count(n)}`).join(", ") || "none";
}

function tallyRow(name: string, t: Tally): string {
  const cells = [t.visits, t.attributed, t.right, t.knowable, t.knowableRight, t.beforeEvidence, t.beforeEvidenceRight].map(count);
  return `| ${name} | ${cells.join(" | ")} |`;
}

const LOOKALIKE = "of them at hosts that looked like one company's office (their own brand's PTR name, no business form and one private address at most, or one person's form on a business line)";

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
    figure("consumer leak", e.figures.leak, "home workers', households', host guests', CGNAT, mobile and cloud visits attributed to any organisation / those visits", 2),
    figure("knowable match", e.figures.knowableMatch, "knowable business visits attributed to the right organisation / knowable business visits"),
    ...(e.wrong.length ? ["", "wrong attributions (visits; row -> lead):", ...e.wrong.slice(0, 8).map(([key, n]) => `  ${count(n).padStart(6)}  ${key}`), `  ${LOOKALIKE}: ${count(e.wrongAtLookalikeHosts)}`] : []),
  ];
}

/** One run's figures: the headline (visits outside declared networks), the declared networks', and the headline by address family. */
export interface RunResult {
  seed: number;
  mix: string;
  seconds: number;
  views: number;
  v6Views: number;
  headline: Evaluation;
  declared: Evaluation;
  ipv4: Evaluation;
  ipv6: Evaluation;
}

const run = (r: RunResult) => `seed ${r.seed} ${r.mix}`;

/** The declared networks' line: what declarations gave, kept out of the headline. */
export function describeDeclared(e: Evaluation): string {
  return `declared networks (not in the figures above): ${count(e.business.visits + e.other.visits)} visits from inside them; ` +
    `precision ${fraction(e.figures.precision)}, business visits right ${fraction(e.figures.matchRate)}, others attributed ${fraction(e.figures.leak, 2)}`;
}

export function describeFamilies(r: RunResult): string {
  const family = (name: string, e: Evaluation) => `${name}: match ${percent(e.figures.matchRate)} of ${count(e.business.visits)}, knowable ${percent(e.figures.knowableMatch)}, precision ${percent(e.figures.precision)}, leak ${percent(e.figures.leak, 2)}`;
  return `by address family (headline visits): ${family("IPv4", r.ipv4)}; ${family("IPv6", r.ipv6)}`;
}

/** The worst run's ratio of a figure: the lowest, or for the leak the highest (a ratio without a denominator is the worst). */
function worst(results: readonly RunResult[], figure: keyof Evaluation["figures"]): { ratio: Ratio; run: RunResult } {
  const value = (r: RunResult) => ratio(r.headline.figures[figure]) ?? (figure === "leak" ? Infinity : -Infinity);
  const sorted = [...results].sort((a, b) => (figure === "leak" ? value(b) - value(a) : value(a) - value(b)));
  return { ratio: sorted[0]!.headline.figures[figure], run: sorted[0]! };
}

/** Per-run lines, then the minimum (for the leak the maximum) over the runs with the targets' verdicts at it. */
export function describeRuns(results: readonly RunResult[]): string[] {
  const per = results.map((r) => {
    const f = r.headline.figures;
    const d = r.declared.figures;
    return `| ${run(r)} | ${count(r.views)} (${percent({ numerator: r.v6Views, denominator: r.views }, 0)} IPv6) | ${percent(f.matchRate)} | ${percent(f.precision)} | ` +
      `${percent(f.leak, 2)} | ${percent(f.knowableMatch)} | ${percent(d.precision)} / ${percent(d.leak, 1)} | ${r.seconds.toFixed(0)} |`;
  });
  const figures = { matchRate: worst(results, "matchRate"), precision: worst(results, "precision"), leak: worst(results, "leak"), knowableMatch: worst(results, "knowableMatch") };
  const verdict = new Map(verdicts({ matchRate: figures.matchRate.ratio, precision: figures.precision.ratio, leak: figures.leak.ratio, knowableMatch: figures.knowableMatch.ratio }).map((v) => [v.name, `target ${v.target}: ${v.met ? "met" : "MISSES"}`]));
  const sum = (of: (r: RunResult) => number) => results.reduce((n, r) => n + of(r), 0);
  const wrongOf = (r: RunResult) => r.headline.wrong.reduce((n, [, visits]) => n + visits, 0);
  const wrongVisits = sum(wrongOf);
  const line = (name: string, key: keyof typeof figures, digits = 1) =>
    `${name.padEnd(15)} ${fraction(figures[key].ratio, digits).padEnd(28)} ${`(${run(figures[key].run)})`.padEnd(18)} ${verdict.get(name) ?? ""}`;
  return [
    "| run | page views | match | precision | consumer leak | knowable match | declared networks: precision / others attributed | seconds |",
    "|---|---:|---:|---:|---:|---:|---:|---:|",
    ...per,
    "",
    `minimum over ${results.length} runs (consumer leak: maximum), without declarations:`,
    line("match rate", "matchRate"),
    line("precision", "precision"),
    line("consumer leak", "leak", 2),
    line("knowable match", "knowableMatch"),
    `wrong attributions over the runs: ${count(wrongVisits)} visits in ${results.filter(wrongOf).length} runs; ${LOOKALIKE}: ${count(sum((r) => r.headline.wrongAtLookalikeHosts))}`,
    withoutLookalikeHosts(results),
  ];
}

/**
 * Precision's minimum with the look-alike hosts' wrong visits left out: what the rules miss where
 * the evidence differs from an office's. Not a target (the headline counts every visit); it tells
 * a rule's miss from a host no evidence tells apart.
 */
export function withoutLookalikeHosts(results: readonly RunResult[]): string {
  const of = (r: RunResult): Ratio => {
    const p = r.headline.figures.precision;
    return { numerator: p.numerator, denominator: p.denominator - r.headline.wrongAtLookalikeHosts };
  };
  const lowest = [...results].sort((a, b) => (ratio(of(a)) ?? -Infinity) - (ratio(of(b)) ?? -Infinity))[0];
  return lowest ? `precision without those visits (not a target): minimum ${fraction(of(lowest))} (${run(lowest)})` : "";
}
