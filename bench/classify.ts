// The network classification measured on a labelled set (bench/classify-set.json: ASN, name,
// true class, where the label comes from, and `split`): `tuning` entries were looked at while the
// rule was chosen (the first two holdouts among them, `formerHoldout`, measured and then tuned
// on); `holdout` entries (214 ASNs labelled on 2026-11-26) were measured once after that round;
// `holdout-draw` entries (64 ISP, hosting and mobile ASNs of a random draw, labelled on 2026-11-28
// before the government type) were measured once after it. docs/tracking.md tells the history.
//   npm run bench:classify [-- --split tuning|holdout|holdout-draw] [--misses]
// Prints precision and recall per class, the share of ISP/hosting/mobile ASNs typed business,
// government or education (they would become organisations' leads) and the share of businesses
// dropped, per split, each counted once per ASN and weighted by the ASNs' announced IPv4
// addresses; exits 1 when a split shown misses the issue's target (withinTarget: operators'
// addresses and businesses, at most TARGET).
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { measure, TARGET, type LabelledNetwork, type Measurement, withinTarget } from "./classify-measure.ts";
import { sharedResolver } from "../server/tracking/ipdata/resolver.ts";

const { values } = parseArgs({ options: { split: { type: "string" }, misses: { type: "boolean", default: false } } });
const set = JSON.parse(readFileSync(new URL("./classify-set.json", import.meta.url), "utf8")) as LabelledNetwork[];
const splits = values.split ? [values.split] : ["tuning", "holdout", "holdout-draw"];
const resolver = sharedResolver();

const percent = (x: number) => `${(100 * x).toFixed(1)}%`;

function report(split: string, m: Measurement): boolean {
  console.log(`\n${split}: ${m.count} ASNs`);
  for (const [type, { precision, recall, count }] of Object.entries(m.perClass)) {
    console.log(`  ${type.padEnd(9)} precision ${percent(precision).padStart(6)}  recall ${percent(recall).padStart(6)}  (${count} labelled)`);
  }
  console.log(`  operators typed as leads: ${percent(m.operatorsAsLeads)} of ASNs, ${percent(m.byAddress.operatorsAsLeads)} of their IPv4 addresses (business, government or education; target: addresses <= ${percent(TARGET)})`);
  console.log(`  businesses dropped:       ${percent(m.businessesDropped)} of ASNs, ${percent(m.byAddress.businessesDropped)} of their IPv4 addresses (target: ASNs <= ${percent(TARGET)})`);
  console.log(`  decided by: ${Object.entries(m.sources).map(([s, n]) => `${s} ${n}`).join(", ")}`);
  const met = withinTarget(m);
  console.log(`  issue's target: ${met ? "met" : "not met"}`);
  if (values.misses) for (const miss of m.misses) console.log(`  miss ${JSON.stringify(miss)}`);
  return met;
}

let ok = true;
for (const split of splits) ok = report(split, measure(set.filter((e) => e.split === split), resolver)) && ok;
process.exitCode = ok ? 0 : 1;
