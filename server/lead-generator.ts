// Realistic made-up leads from a seed: the same seed and end time give the same leads. Feeds the
// demo account and bench/leads-plan.ts (tracking is what fills real datasets).
import type { NewLead } from "./services/leads.ts";
import { seededRandom } from "./seeded-random.ts";

export interface LeadGeneration {
  count: number;
  seed: number;
  /** The latest possible visit; visits spread over the 180 days before it. */
  end: Date;
  /** Prefix of the generated lead ids. */
  idPrefix?: string;
}


const names = ["Acme", "Globex", "Initech", "Umbrella", "Stark", "Wayne", "Hooli", "Vandelay", "Soylent", "Tyrell",
  "Cyberdyne", "Wonka", "Oscorp", "Nakatomi", "Gringotts", "Monarch", "Aperture", "Black Mesa", "Pied Piper", "Dunder",
  "Sterling", "Bluth", "Prestige", "Nordwind", "Alpenblick", "Havel", "Lumen", "Quantix", "Brightline", "Kestrel"];

/** Second word of the name, and the industry it suggests. */
const lines: [string, string][] = [
  ["Software", "Software"], ["Systems", "Software"], ["Analytics", "Software"], ["Logistics", "Transportation"],
  ["Foods", "Food & Beverage"], ["Health", "Healthcare"], ["Energy", "Energy"], ["Labs", "Biotechnology"],
  ["Bank", "Financial Services"], ["Motors", "Automotive"], ["Consulting", "Professional Services"], ["Retail", "Retail"],
];

/** Country, its share of the traffic, legal form, and cities. */
const countries: [string, number, string, string[]][] = [
  ["DE", 30, "GmbH", ["Berlin", "Munich", "Hamburg", "Cologne", "Frankfurt"]],
  ["US", 22, "Inc", ["New York", "Austin", "San Francisco", "Chicago", "Boston"]],
  ["GB", 12, "Ltd", ["London", "Manchester", "Leeds", "Bristol"]],
  ["FR", 8, "SAS", ["Paris", "Lyon", "Toulouse"]],
  ["NL", 7, "BV", ["Amsterdam", "Rotterdam", "Utrecht"]],
  ["AT", 6, "GmbH", ["Vienna", "Graz", "Linz"]],
  ["CH", 6, "AG", ["Zurich", "Geneva", "Basel"]],
  ["SE", 5, "AB", ["Stockholm", "Gothenburg"]],
  ["ES", 4, "SL", ["Madrid", "Barcelona"]],
];

const tagPool: [string, number][] = [["hot", 0.15], ["customer", 0.08], ["newsletter", 0.2], ["follow-up", 0.1], ["partner", 0.04]];

const DAY_MS = 86_400_000;

export function generateLeads({ count, seed, end, idPrefix = "lead" }: LeadGeneration): NewLead[] {
  const next = seededRandom(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
  const totalShare = countries.reduce((sum, c) => sum + c[1], 0);
  const pickCountry = () => {
    let r = next() * totalShare;
    return countries.find((c) => (r -= c[1]) < 0) ?? countries[0]!;
  };
  const leads: NewLead[] = [];
  for (let i = 0; i < count; i++) {
    const [country, , legalForm, cities] = pickCountry();
    const name = pick(names);
    const [line, industry] = pick(lines);
    const slug = `${name}-${line}`.toLowerCase().replace(/[^a-z0-9]+/g, "-");
    const firstVisitAt = new Date(end.getTime() - Math.floor(next() * 180 * DAY_MS));
    const lastVisitAt = new Date(firstVisitAt.getTime() + Math.floor(next() * (end.getTime() - firstVisitAt.getTime())));
    leads.push({
      leadId: `${idPrefix}_${i.toString(36).padStart(6, "0")}`,
      organizationName: `${name} ${line} ${legalForm}`,
      organizationDomain: next() < 0.95 ? `${slug}.example` : null,
      industry: next() < 0.9 ? industry : null,
      // log-uniform from 5 to about 50,000 employees
      employeeCount: next() < 0.85 ? Math.round(5 * Math.pow(10_000, next())) : null,
      country,
      city: next() < 0.9 ? pick(cities) : null,
      firstVisitAt,
      lastVisitAt,
      visitCount: 1 + Math.floor(Math.pow(next(), 3) * 40),
      tags: tagPool.filter(([, share]) => next() < share).map(([tag]) => tag),
    });
  }
  return leads;
}
