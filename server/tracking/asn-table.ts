// The IP-to-ASN data set (@ip-location-db/asn, CC BY 4.0: RouteViews and DB-IP) as sorted range
// tables in typed arrays: a look-up is a binary search, no database and no allocation per address.
// The CSV files hold `start,end,asn,name` with numeric addresses; they are read as bytes (no
// per-line strings) so that loading does not need several times the file in memory.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { ParsedIp } from "./ip.ts";

export interface AsnRecord {
  asn: number;
  /** The AS organisation's name as the data set gives it. */
  name: string;
}

const COMMA = 44;
const NEWLINE = 10;
const QUOTE = 34;

interface Row {
  start: string;
  end: string;
  asn: number;
  nameFrom: number;
  nameTo: number;
}

/** Calls `row` for each line; the name is left as a byte range, decoded only for a new ASN. */
function eachRow(bytes: Buffer, row: (r: Row) => void): void {
  let pos = 0;
  const field = (): [number, number] => {
    const from = pos;
    if (bytes[pos] === QUOTE) {
      pos += 1;
      while (pos < bytes.length && !(bytes[pos] === QUOTE && bytes[pos + 1] !== QUOTE)) pos += bytes[pos] === QUOTE ? 2 : 1;
      pos += 1;
    } else {
      while (pos < bytes.length && bytes[pos] !== COMMA && bytes[pos] !== NEWLINE) pos += 1;
    }
    const to = pos;
    if (bytes[pos] === COMMA) pos += 1;
    return [from, to];
  };
  while (pos < bytes.length) {
    const [s0, s1] = field();
    const [e0, e1] = field();
    const [a0, a1] = field();
    const [n0, n1] = field();
    while (pos < bytes.length && bytes[pos] !== NEWLINE) pos += 1;
    pos += 1;
    if (s1 === s0) continue;
    row({ start: bytes.toString("latin1", s0, s1), end: bytes.toString("latin1", e0, e1), asn: Number(bytes.toString("latin1", a0, a1)), nameFrom: n0, nameTo: n1 });
  }
}

function decodeName(bytes: Buffer, from: number, to: number): string {
  const raw = bytes.toString("utf8", from, to);
  return raw.startsWith('"') ? raw.slice(1, -1).replaceAll('""', '"') : raw;
}

/** Counts the lines, to size the typed arrays once. */
function lineCount(bytes: Buffer): number {
  let n = 0;
  for (let i = bytes.indexOf(NEWLINE); i !== -1; i = bytes.indexOf(NEWLINE, i + 1)) n += 1;
  return n + 1;
}

/** The four 32-bit words of a 128-bit number given in decimal (most significant first). */
function words(decimal: string): [number, number, number, number] {
  const n = BigInt(decimal);
  return [Number((n >> 96n) & 0xffffffffn), Number((n >> 64n) & 0xffffffffn), Number((n >> 32n) & 0xffffffffn), Number(n & 0xffffffffn)];
}

/** Row `row` of a four-words-per-row table against `ip`: negative, zero or positive. */
function compareWords(table: Uint32Array, row: number, ip: readonly number[]): number {
  for (let k = 0; k < 4; k++) {
    const diff = table[row * 4 + k]! - ip[k]!;
    if (diff !== 0) return diff;
  }
  return 0;
}

export class AsnTable {
  private v4Start: Uint32Array;
  private v4End: Uint32Array;
  private v4Asn: Uint32Array;
  private v4Count = 0;
  /** Four words per range, most significant first. */
  private v6Start: Uint32Array;
  private v6End: Uint32Array;
  private v6Asn: Uint32Array;
  private v6Count = 0;
  readonly names = new Map<number, string>();

  constructor(ipv4Csv: Buffer, ipv6Csv: Buffer) {
    const n4 = lineCount(ipv4Csv);
    this.v4Start = new Uint32Array(n4);
    this.v4End = new Uint32Array(n4);
    this.v4Asn = new Uint32Array(n4);
    eachRow(ipv4Csv, (r) => {
      const i = this.v4Count++;
      this.v4Start[i] = Number(r.start);
      this.v4End[i] = Number(r.end);
      this.v4Asn[i] = r.asn;
      if (!this.names.has(r.asn)) this.names.set(r.asn, decodeName(ipv4Csv, r.nameFrom, r.nameTo));
    });
    const n6 = lineCount(ipv6Csv);
    this.v6Start = new Uint32Array(n6 * 4);
    this.v6End = new Uint32Array(n6 * 4);
    this.v6Asn = new Uint32Array(n6);
    eachRow(ipv6Csv, (r) => {
      const i = this.v6Count++;
      this.v6Start.set(words(r.start), i * 4);
      this.v6End.set(words(r.end), i * 4);
      this.v6Asn[i] = r.asn;
      if (!this.names.has(r.asn)) this.names.set(r.asn, decodeName(ipv6Csv, r.nameFrom, r.nameTo));
    });
  }

  get size(): { ipv4: number; ipv6: number; asns: number } {
    return { ipv4: this.v4Count, ipv6: this.v6Count, asns: this.names.size };
  }

  /** The AS whose announced range holds the address; undefined when none does (private, unrouted). */
  lookup(ip: ParsedIp): AsnRecord | undefined {
    const asn = ip.version === 4 ? this.lookupV4(ip.value) : this.lookupV6(ip.words);
    if (!asn) return undefined;
    return { asn, name: this.names.get(asn) ?? `AS${asn}` };
  }

  /** Every announced IPv4 range as numbers (start and end inclusive). */
  eachIpv4Range(range: (asn: number, start: number, end: number) => void): void {
    for (let i = 0; i < this.v4Count; i++) range(this.v4Asn[i]!, this.v4Start[i]!, this.v4End[i]!);
  }

  /** Every announced IPv6 range with its size in /48 networks (at least 1). */
  eachIpv6Range(range: (asn: number, slash48s: number) => void): void {
    for (let i = 0; i < this.v6Count; i++) {
      // the top 64 bits, as a difference of words, so that no precision is lost to large doubles
      const top = (this.v6End[i * 4]! - this.v6Start[i * 4]!) * 2 ** 32 + (this.v6End[i * 4 + 1]! - this.v6Start[i * 4 + 1]!);
      range(this.v6Asn[i]!, Math.max(1, Math.floor((top + 1) / 2 ** 16)));
    }
  }

  /** A name of the AS (for the domain look-up's curated organisations). */
  nameOf(asn: number): string | undefined {
    return this.names.get(asn);
  }

  private lookupV4(value: number): number {
    let lo = 0;
    let hi = this.v4Count - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (this.v4Start[mid]! <= value) lo = mid + 1;
      else hi = mid - 1;
    }
    return hi >= 0 && this.v4End[hi]! >= value ? this.v4Asn[hi]! : 0;
  }

  private lookupV6(ip: readonly number[]): number {
    let lo = 0;
    let hi = this.v6Count - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (compareWords(this.v6Start, mid, ip) <= 0) lo = mid + 1;
      else hi = mid - 1;
    }
    return hi >= 0 && compareWords(this.v6End, hi, ip) >= 0 ? this.v6Asn[hi]! : 0;
  }
}

const require = createRequire(import.meta.url);

/** The installed data package's version (the evidence cache is keyed by it). */
export function asnDataVersion(): string {
  return (require("@ip-location-db/asn/package.json") as { version: string }).version;
}

/** The data set as installed (npm package @ip-location-db/asn, version pinned in package.json). */
export function loadAsnTable(): AsnTable {
  const file = (name: string) => readFileSync(require.resolve(`@ip-location-db/asn/${name}`));
  return new AsnTable(file("asn-ipv4-num.csv"), file("asn-ipv6-num.csv"));
}
