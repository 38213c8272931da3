// The IP-to-ASN data set (@ip-location-db/asn, CC BY 4.0: RouteViews and DB-IP) as sorted range
// tables in typed arrays: a look-up is a binary search, no database and no allocation per address.
// The CSV files hold `start,end,asn,name` with numeric addresses; they are read as bytes (no
// per-line strings) so that loading does not need several times the file in memory.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
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

/** The arrays of a table as `toPrepared` stores them (each exactly as long as its rows). */
interface Prepared {
  v4Start: Uint32Array;
  v4End: Uint32Array;
  v4Asn: Uint32Array;
  v6Start: Uint32Array;
  v6End: Uint32Array;
  v6Asn: Uint32Array;
  names: [number, string][];
}

/** "ASNT", little-endian. */
const PREPARED_MAGIC = 0x544e5341;
/** Bumped when the prepared form changes, so that an old file is not read. */
const PREPARED_FORMAT = 1;
const HEADER_WORDS = 9;

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

  /** From the data set's two CSV files, or from the prepared form `toPrepared` wrote (a read, no parsing). */
  constructor(ipv4Csv: Buffer, ipv6Csv: Buffer);
  constructor(prepared: Prepared);
  constructor(ipv4CsvOrPrepared: Buffer | Prepared, ipv6Csv?: Buffer) {
    if (!Buffer.isBuffer(ipv4CsvOrPrepared)) {
      const p = ipv4CsvOrPrepared;
      [this.v4Start, this.v4End, this.v4Asn, this.v6Start, this.v6End, this.v6Asn] = [p.v4Start, p.v4End, p.v4Asn, p.v6Start, p.v6End, p.v6Asn];
      this.v4Count = p.v4Asn.length;
      this.v6Count = p.v6Asn.length;
      for (const [asn, name] of p.names) this.names.set(asn, name);
      return;
    }
    const ipv4Csv = ipv4CsvOrPrepared;
    ipv6Csv ??= Buffer.alloc(0);
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

  /**
   * The prepared form: a header (magic, format, the six arrays' lengths, the names' byte length),
   * the arrays as they are in memory, then the names as JSON. Reading it back is a file read and
   * six views on it: no parsing of the 32 MB of CSV at each start.
   */
  toPrepared(): Buffer {
    const arrays = [
      this.v4Start.subarray(0, this.v4Count),
      this.v4End.subarray(0, this.v4Count),
      this.v4Asn.subarray(0, this.v4Count),
      this.v6Start.subarray(0, this.v6Count * 4),
      this.v6End.subarray(0, this.v6Count * 4),
      this.v6Asn.subarray(0, this.v6Count),
    ];
    const names = Buffer.from(JSON.stringify([...this.names]), "utf8");
    const header = new Uint32Array([PREPARED_MAGIC, PREPARED_FORMAT, ...arrays.map((a) => a.length), names.length]);
    return Buffer.concat([Buffer.from(header.buffer), ...arrays.map((a) => Buffer.from(a.buffer, a.byteOffset, a.byteLength)), names]);
  }

  /** The table from `toPrepared`'s bytes; undefined when they are not of this format (an older file). */
  static fromPrepared(bytes: Buffer): AsnTable | undefined {
    // the views need 4-byte alignment: a pooled Buffer may not start on it
    const aligned = bytes.byteOffset % 4 === 0 ? bytes : Buffer.from(bytes);
    const words = (offset: number, length: number) => new Uint32Array(aligned.buffer, aligned.byteOffset + offset, length);
    if (aligned.length < HEADER_WORDS * 4) return undefined;
    const header = words(0, HEADER_WORDS);
    if (header[0] !== PREPARED_MAGIC || header[1] !== PREPARED_FORMAT) return undefined;
    const lengths = Array.from(header.subarray(2, 8));
    const namesBytes = header[8]!;
    if (aligned.length !== HEADER_WORDS * 4 + lengths.reduce((sum, n) => sum + n * 4, 0) + namesBytes) return undefined;
    let offset = HEADER_WORDS * 4;
    const [v4Start, v4End, v4Asn, v6Start, v6End, v6Asn] = lengths.map((length) => {
      const view = words(offset, length);
      offset += length * 4;
      return view;
    }) as [Uint32Array, Uint32Array, Uint32Array, Uint32Array, Uint32Array, Uint32Array];
    const names = JSON.parse(aligned.toString("utf8", offset, offset + namesBytes)) as [number, string][];
    return new AsnTable({ v4Start, v4End, v4Asn, v6Start, v6End, v6Asn, names });
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

let cacheDir: string | undefined;

/** IP_DATA_CACHE_DIR (server/config.ts), set by server/main.ts before the data is loaded. */
export function setIpDataCacheDir(dir: string | undefined): void {
  cacheDir = dir;
}

/**
 * Where prepared forms of the IP data are kept: node_modules/.cache (beside the data packages,
 * keyed by their versions; shared by every DATA_DIR and by the tests), unless IP_DATA_CACHE_DIR
 * moves it (bench:start measures a first start without prepared data this way).
 */
export function ipDataCacheDir(): string {
  const nodeModules = dirname(dirname(dirname(require.resolve("@ip-location-db/asn/package.json"))));
  return cacheDir ?? join(nodeModules, ".cache");
}

/** <cache>/asn-table/<format>-<data version>.bin */
export function asnTableCacheFile(): string {
  return join(ipDataCacheDir(), "asn-table", `${PREPARED_FORMAT}-${asnDataVersion()}.bin`);
}

/**
 * The data set as installed (npm package @ip-location-db/asn, version pinned in package.json):
 * from its prepared form when there is one (about 0.1 s), else parsed from the CSV files (several
 * seconds, much more on a busy machine) and the prepared form written for the next start.
 */
export function loadAsnTable(file = asnTableCacheFile()): AsnTable {
  if (existsSync(file)) {
    const table = AsnTable.fromPrepared(readFileSync(file));
    if (table) return table;
  }
  const csv = (name: string) => readFileSync(require.resolve(`@ip-location-db/asn/${name}`));
  const table = new AsnTable(csv("asn-ipv4-num.csv"), csv("asn-ipv6-num.csv"));
  try {
    mkdirSync(dirname(file), { recursive: true });
    const partial = `${file}.${process.pid}.tmp`; // another process may be writing it too
    writeFileSync(partial, table.toPrepared());
    renameSync(partial, file);
  } catch {
    // a read-only installation parses the CSV at each start
  }
  return table;
}
