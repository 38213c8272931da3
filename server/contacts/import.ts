// The operator's contact import: streams an NDJSON or CSV file of any size, checks each record,
// and upserts the valid ones in batches. Memory stays flat: the file is read only as fast as the
// batches are written, and one batch is held at a time.
//
// CSV: a header row naming the columns email, fullName, headline, linkedinUrl, seniority,
// jobFunction, location, languages, experience (any order; email and fullName required, the
// others optional); languages and experience hold JSON arrays; an empty cell is an absent field.
import { createReadStream, type ReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { StringDecoder } from "node:string_decoder";
import { type CsvError, parse as parseCsv } from "csv-parse";
import { checkProfile, type ContactProfile, type UpsertResult } from "./profile.ts";
import { createProgress } from "./progress.ts";

export const csvColumns = [
  "email",
  "fullName",
  "headline",
  "linkedinUrl",
  "seniority",
  "jobFunction",
  "location",
  "languages",
  "experience",
] as const;
const jsonColumns = new Set(["languages", "experience"]);

export type ImportFormat = "ndjson" | "csv";

/** One record of the file: its line number and either the parsed value or why it is unreadable. */
type SourceRecord = { line: number; value: unknown } | { line: number; error: string };

export class ImportFileError extends Error {}

/** Lines of an NDJSON file; blank lines are skipped. Pulls a chunk only when the previous one is used. */
async function* ndjsonRecords(stream: ReadStream): AsyncGenerator<SourceRecord> {
  const decoder = new StringDecoder("utf8");
  let pending = "";
  let line = 0;
  const parse = (text: string): SourceRecord => {
    try {
      return { line, value: JSON.parse(text) };
    } catch (error) {
      return { line, error: `not valid JSON (${(error as Error).message})` };
    }
  };
  for await (const chunk of stream) {
    const lines = (pending + decoder.write(chunk as Buffer)).split("\n");
    pending = lines.pop()!;
    for (const text of lines) {
      line += 1;
      if (text.trim()) yield parse(text);
    }
  }
  pending += decoder.end();
  line += 1;
  if (pending.trim()) yield parse(pending);
}

/** A CSV cell of a JSON column, parsed. */
function csvValue(column: string, cell: string): unknown {
  if (!jsonColumns.has(column) || cell === "") return cell;
  return JSON.parse(cell);
}

/** Records of a CSV file with a header row. A record's line is the line it ends on. */
async function* csvRecords(stream: ReadStream): AsyncGenerator<SourceRecord> {
  const skipped: SourceRecord[] = [];
  const parser = stream.pipe(
    parseCsv({
      columns: (header: string[]) => checkHeader(header),
      bom: true,
      info: true,
      skip_empty_lines: true,
      skip_records_with_error: true,
      on_skip: (error: CsvError | undefined) => {
        skipped.push({ line: Number(error?.lines ?? 0), error: error?.message ?? "unreadable CSV record" });
      },
    }),
  );
  for await (const { record, info } of parser as AsyncIterable<{ record: Record<string, string>; info: { lines: number } }>) {
    yield* skipped.splice(0);
    try {
      yield { line: info.lines, value: Object.fromEntries(Object.entries(record).map(([k, v]) => [k, csvValue(k, v)])) };
    } catch (error) {
      yield { line: info.lines, error: `a JSON column is not valid JSON (${(error as Error).message})` };
    }
  }
  yield* skipped.splice(0);
}

function checkHeader(header: string[]): string[] {
  const unknown = header.filter((c) => !(csvColumns as readonly string[]).includes(c));
  const missing = ["email", "fullName"].filter((c) => !header.includes(c));
  if (unknown.length || missing.length) {
    throw new ImportFileError(
      `CSV header: ${[...unknown.map((c) => `unknown column "${c}"`), ...missing.map((c) => `missing column "${c}"`)].join(", ")}` +
        ` (columns: ${csvColumns.join(", ")})`,
    );
  }
  return header;
}

/** Where imported profiles are written (the contact service's upsertMany, given by the caller). */
export interface ContactStore {
  upsertMany(profiles: readonly ContactProfile[]): Promise<UpsertResult>;
}

export interface BatchTotals extends UpsertResult {
  /** Valid records replaced by a later record of the same e-mail in the same batch. */
  superseded: number;
}

/** Collects profiles and writes them a batch at a time; within a batch the last record of an e-mail wins. */
export class BatchWriter {
  private batch = new Map<string, ContactProfile>();
  readonly totals: BatchTotals = { inserted: 0, updated: 0, unchanged: 0, superseded: 0 };

  constructor(
    private readonly store: ContactStore,
    private readonly size = 1000,
  ) {}

  async add(profile: ContactProfile): Promise<void> {
    if (this.batch.delete(profile.email)) this.totals.superseded += 1;
    this.batch.set(profile.email, profile);
    if (this.batch.size >= this.size) await this.flush();
  }

  async flush(): Promise<void> {
    if (!this.batch.size) return;
    const result = await this.store.upsertMany([...this.batch.values()]);
    this.batch.clear();
    this.totals.inserted += result.inserted;
    this.totals.updated += result.updated;
    this.totals.unchanged += result.unchanged;
  }
}

export interface ImportOptions {
  file: string;
  /** Default: from the file name (.csv is CSV, anything else NDJSON). */
  format?: ImportFormat;
  store: ContactStore;
  batchSize?: number;
  /** Show a progress bar on stderr. */
  progress?: boolean;
  /** Called for every rejected record; by default it is printed on stderr as `line N: reason`. */
  onReject?: (line: number, reason: string) => void;
}

export interface ImportSummary extends BatchTotals {
  records: number;
  rejected: number;
  seconds: number;
}

export function formatOf(file: string): ImportFormat {
  return file.toLowerCase().endsWith(".csv") ? "csv" : "ndjson";
}

export async function importContacts(options: ImportOptions): Promise<ImportSummary> {
  const started = Date.now();
  const { size } = await stat(options.file).catch((error: Error) => {
    throw new ImportFileError(`cannot read ${options.file}: ${error.message}`);
  });
  const stream = createReadStream(options.file);
  const source = (options.format ?? formatOf(options.file)) === "csv" ? csvRecords(stream) : ndjsonRecords(stream);
  const writer = new BatchWriter(options.store, options.batchSize);
  const progress = createProgress({ total: size, enabled: !!options.progress });
  let records = 0;
  let rejected = 0;
  const reject = (line: number, reason: string) => {
    rejected += 1;
    if (options.onReject) options.onReject(line, reason);
    else progress.note(`line ${line}: ${reason}`);
  };
  const detail = () => `${records.toLocaleString("en")} records, ${rejected.toLocaleString("en")} rejected`;
  try {
    for await (const record of source) {
      records += 1;
      const checked = "error" in record ? { ok: false as const, reason: record.error } : checkProfile(record.value);
      if (checked.ok) await writer.add(checked.profile);
      else reject(record.line, checked.reason);
      progress.update(stream.bytesRead, detail());
    }
    await writer.flush();
  } finally {
    stream.destroy();
  }
  progress.finish(stream.bytesRead, detail());
  return { records, rejected, ...writer.totals, seconds: (Date.now() - started) / 1000 };
}
