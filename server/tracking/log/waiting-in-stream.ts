// The events of a data subject waiting in the JetStream ingest log, for an export (waiting-events.ts):
// the stream's messages read by sequence number through its message API, on a connection of the
// export's own. That is neither a consumer nor an acknowledgement: the writers' consumer and the
// messages stay as they were. (A work-queue stream allows no second consumer over its subject, not
// even an ordered one, and the batched direct get needs nats-server 2.11; reading by sequence works
// on every server.) Bounded by a deadline, after which the read says it is incomplete. A message a
// writer has written already (its id is in "IngestedBatch", its acknowledgement not yet through)
// is left out: its events are in the written tables.
import { jetstreamManager, type JetStreamManager, JetStreamApiCodes, JetStreamApiError, type StoredMsg } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import type { IngestLogConfig } from "../../config.ts";
import type { Db } from "../../db/database.ts";
import { Unavailable } from "../../domain/errors.ts";
import { jsonList, type Subject } from "../write/erasure.ts";
import { type QueueRow, rowsOfLogged } from "../collect/events.ts";

/** Events found waiting, oldest first; `complete` false when more may wait than were listed. */
export interface Waiting {
  rows: readonly QueueRow[];
  complete: boolean;
}

/** The subject's visitor ids, per dataset; a read of the log adds the visitors a waiting form names by the address. */
export type VisitorsByDataset = Map<string, Set<string>>;

/** How long an export reads the stream at most. */
export const STREAM_READ_MS = 10_000;
/** Messages asked for at once. */
const READ_WINDOW = 128;
/** The wait a 503 announces when the stream did not answer. */
const RETRY_AFTER_SECONDS = 2;

/** A form carrying the person's address (trimmed, any case: as the tombstones compare it). */
function carriesAddress(row: QueueRow, subject: Subject): boolean {
  return subject.type === "person" && row.event.type === "form" && Object.values(row.event.fields).some((v) => v.trim().toLowerCase() === subject.email);
}

const unreadable = (why: string) =>
  new Unavailable(`The ingest log could not be read (${why}): nothing was exported; retry after the Retry-After seconds`, RETRY_AFTER_SECONDS);

/** A message's id (the collector's Nats-Msg-Id, as the writers record it) and events; undefined for a message that is not a batch. */
function readStored(msg: StoredMsg, stream: string): { id: string; rows: QueueRow[] } | undefined {
  try {
    return { id: msg.header.get("Nats-Msg-Id") || `${stream}:${msg.seq}`, rows: rowsOfLogged(msg.json()) };
  } catch {
    return undefined; // the writers drop it too
  }
}

/**
 * Sorts the stream's events as they are read: the subject's (of its visitors in `visitors`, which
 * the visitors of forms carrying a person's address join), and where the events of other visitors
 * of the scope are, should a later form name one of them.
 */
function subjectSorter(accountId: string, visitors: VisitorsByDataset, subject: Subject, stream: string) {
  const found: { id: string; row: QueueRow }[] = [];
  const elsewhere = new Map<string, Set<number>>();
  const key = (datasetId: string, visitorId: string) => `${datasetId}\n${visitorId}`;
  const idsOf = (row: QueueRow) => (row.accountId === accountId ? visitors.get(row.datasetId) : undefined);
  function take(msg: StoredMsg, only?: (row: QueueRow) => boolean): void {
    const read = readStored(msg, stream);
    for (const row of read?.rows ?? []) {
      const ids = idsOf(row);
      if (!ids || (only && !only(row))) continue;
      if (carriesAddress(row, subject)) ids.add(row.event.visitorId);
      if (ids.has(row.event.visitorId)) found.push({ id: read!.id, row });
      else if (!only) remember(key(row.datasetId, row.event.visitorId), msg.seq);
    }
  }
  function remember(visitor: string, seq: number): void {
    const seqs = elsewhere.get(visitor) ?? new Set<number>();
    elsewhere.set(visitor, seqs.add(seq));
  }
  /** Events read before a form named their visitor: the messages to read again, and which of their events to take. */
  function late() {
    const named = new Set([...visitors].flatMap(([datasetId, ids]) => [...ids].map((id) => key(datasetId, id))).filter((k) => elsewhere.has(k)));
    const seqs = [...new Set([...named].flatMap((k) => [...elsewhere.get(k)!]))].sort((a, b) => a - b);
    return { seqs, only: (row: QueueRow) => named.has(key(row.datasetId, row.event.visitorId)) };
  }
  return { take, late, found };
}

/** Reads the messages from the stream's first to its last within the deadline, a window at a time; whether it read them all. */
async function readAll(jsm: JetStreamManager, stream: string, deadline: number, each: (msg: StoredMsg) => void): Promise<boolean> {
  const state = await jsm.streams.info(stream).then(
    (info) => info.state,
    (error: unknown) => {
      if (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound) return undefined; // none made yet: nothing waits
      throw error;
    },
  );
  if (!state?.messages) return true;
  for (let first = state.first_seq; first <= state.last_seq; first += READ_WINDOW) {
    if (Date.now() > deadline) return false;
    const seqs = Array.from({ length: Math.min(READ_WINDOW, state.last_seq - first + 1) }, (_, i) => first + i);
    // a sequence a writer's acknowledgement removed: null
    for (const msg of await Promise.all(seqs.map((seq) => jsm.streams.getMessage(stream, { seq })))) if (msg) each(msg);
  }
  return true;
}

/** The subject's events in the stream, read within STREAM_READ_MS; the visitors of forms carrying a person's address join `visitors`. */
export async function streamEventsOf(db: Db, config: IngestLogConfig, accountId: string, visitors: VisitorsByDataset, subject: Subject): Promise<Waiting> {
  const sorter = subjectSorter(accountId, visitors, subject, config.stream);
  const complete = await withStream(config, async (jsm) => {
    const whole = await readAll(jsm, config.stream, Date.now() + STREAM_READ_MS, (msg) => sorter.take(msg));
    const late = sorter.late();
    for (const seq of late.seqs) {
      const msg = await jsm.streams.getMessage(config.stream, { seq });
      if (msg) sorter.take(msg, late.only);
    }
    return whole;
  });
  const written = await writtenIds(db, [...new Set(sorter.found.map((f) => f.id))]);
  return { rows: sorter.found.filter((f) => !written.has(f.id)).map((f) => f.row), complete };
}

/** Runs `read` on a connection of its own to the stream's servers; anything that fails there is a 503. */
async function withStream<T>(config: IngestLogConfig, read: (jsm: JetStreamManager) => Promise<T>): Promise<T> {
  const nc = await connect({ servers: config.servers, name: "lead-intel-export", timeout: config.timeoutMs, maxReconnectAttempts: 0, noAsyncTraces: true }).catch(
    (error: Error) => {
      throw unreadable(error.message);
    },
  );
  try {
    return await read(await jetstreamManager(nc, { timeout: config.timeoutMs }));
  } catch (error) {
    throw unreadable((error as Error).message);
  } finally {
    await nc.close();
  }
}

/** The ones of these message ids that a writer has written (the stream keeps a message until its acknowledgement). */
async function writtenIds(db: Db, ids: string[]): Promise<Set<string>> {
  if (!ids.length) return new Set();
  const rows = await db.$queryRaw<{ id: string }[]>`SELECT id FROM "IngestedBatch" WHERE id IN ${jsonList(ids)}`;
  return new Set(rows.map((r) => r.id));
}
