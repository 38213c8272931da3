// What the script sends (a batch of events, typed from spec/collector.yaml), its body limit, and what the collector queues for the
// writer: the event resolved, its sensitive form fields removed and its address masked when asked.
import { createHash } from "node:crypto";
import type { components } from "../../../generated/collector.ts";
import type { NetworkType } from "../ipdata/network-class.ts";

export const LIMITS = {
  /** Largest request body in bytes (POST /collect, spec/collector.yaml: 413 beyond it). */
  bodyBytes: 65_536,
} as const;

/** What the script sends: spec/collector.yaml's Batch, the only schema (validated from the document: collector.ts). */
export type Batch = components["schemas"]["Batch"];
export type TrackedEvent = Batch["events"][number];
export type PageViewEvent = components["schemas"]["PageView"];
export type FormEvent = components["schemas"]["FormEvent"];

/** Where the visitor's network was resolved to (the organisation the visit counts for). */
export interface NetworkOfEvent {
  leadId: string;
  organizationName: string;
  organizationDomain: string | null;
  asn: number | null;
  networkType: NetworkType;
  country: string | null;
  city: string | null;
  /** As received, or masked (a.b.c.0, a:b:c::) when the dataset allows masking. */
  ip: string;
  /**
   * Pending: a page view or form of an isp, hosting, mobile or unknown network, whose organisation
   * the writer looks up by the address's identity (server/identity); `leadId` and the organisation
   * are then empty, `organizationName`/`organizationDomain` the network operator's when known.
   */
  pending?: true;
  /** `ip` is masked (the dataset's allowIpMasking). */
  masked?: true;
  /** How the organisation was recognised (absent: its own network). */
  identitySource?: "network" | "reverse_dns" | "form_email" | "declared";
  identityConfidence?: number;
}

/** An event with its visitor id settled (sent by the script, or derived by the collector). */
type WithVisitor<E> = E extends unknown ? Omit<E, "visitorId"> & { visitorId: string } : never;

/** An accepted event as the log holds it: its visitor id settled, its form fields kept (form-fields.ts). */
export type AcceptedEvent = WithVisitor<PageViewEvent | FormEvent>;

/**
 * What the collector appends to the ingest log for one request (a row of the queue table
 * "IngestQueue", an element of a JetStream message): its accepted events, and once what they
 * share (received together from one address of one dataset): a quarter of the bytes of an
 * event each, and one row instead of one per event.
 */
export interface QueuedBatch {
  accountId: string;
  datasetId: string;
  /** When the collector accepted the batch (ISO 8601): each event's `at`. */
  at: string;
  /** The dataset's contactEnrichment when the batch was accepted. */
  enrich: boolean;
  network: NetworkOfEvent;
  events: AcceptedEvent[];
}

/** The writer's view of an event: one per event of a batch (QueueRow). */
export type QueuedEvent = AcceptedEvent & {
  at: string;
  network: NetworkOfEvent;
  /** The dataset's contactEnrichment when the event was accepted. */
  enrich: boolean;
};

/**
 * The lead of an organisation: one per organisation name and dataset (an organisation with
 * several ASNs under one name is one lead). Deterministic, so every collector agrees on it.
 */
export function leadIdOf(organizationName: string): string {
  return `org_${createHash("sha256").update(organizationName.trim().toLowerCase()).digest("hex").slice(0, 20)}`;
}

export { keptFields, looksLikeCardNumber } from "./form-fields.ts";

const emailPattern = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** The address a form identifies its visitor by: a field named like e-mail first, else any value that is one. */
export function emailOf(fields: Record<string, string>): string | undefined {
  const entries = Object.entries(fields).map(([key, value]) => [key, value.trim()] as const);
  const named = entries.find(([key, value]) => /e-?mail/i.test(key) && emailPattern.test(value));
  const found = named ?? entries.find(([, value]) => emailPattern.test(value));
  return found?.[1].toLowerCase();
}

export interface QueueRow {
  accountId: string;
  datasetId: string;
  receivedAt: Date;
  event: QueuedEvent;
}

/** A batch's events as the writer takes them. */
export function rowsOf(batch: QueuedBatch): QueueRow[] {
  const { accountId, datasetId, at, enrich, network } = batch;
  const receivedAt = new Date(at);
  return batch.events.map((event) => ({ accountId, datasetId, receivedAt, event: { ...event, at, enrich, network } }));
}

/** An entry of a log that cannot be read as a batch: no retry can write it, so it is set aside at once. */
export class MalformedBatch extends Error {}

/** Why a JetStream message that is not JSON is set aside (its text is kept as the dead letter's payload). */
export const NOT_JSON = "not a batch: the message is not JSON";

/** An event as a version before batches appended it to a JetStream stream (QueueRow, as JSON). */
type LoggedRow = Omit<QueueRow, "receivedAt"> & { receivedAt: string };

type Untrusted = Record<string, unknown>;
const isObject = (value: unknown): value is Untrusted => typeof value === "object" && value !== null && !Array.isArray(value);
const isDate = (value: unknown) => typeof value === "string" && !Number.isNaN(Date.parse(value));
const isFields = (fields: unknown) => isObject(fields) && Object.values(fields).every((v) => typeof v === "string");
/** What the writer's own code relies on (the database checks the rest: a null lead id is its to refuse). */
const isEvent = (e: unknown) => isObject(e) && (e.type === "pageview" || (e.type === "form" && isFields(e.fields)));
const isBatch = (b: Untrusted) =>
  typeof b.accountId === "string" && typeof b.datasetId === "string" && isDate(b.at) && isObject(b.network) && Array.isArray(b.events) && b.events.every(isEvent);
const isLoggedRow = (r: Untrusted) =>
  typeof r.accountId === "string" && typeof r.datasetId === "string" && isDate(r.receivedAt) && isEvent(r.event) && isDate((r.event as Untrusted).at) && isObject((r.event as Untrusted).network);

/** The events of one entry of a log (a batch, or an older version's event row); MalformedBatch when it is neither. */
export function rowsOfEntry(entry: unknown): QueueRow[] {
  if (isObject(entry) && "event" in entry && isLoggedRow(entry)) {
    const row = entry as unknown as LoggedRow;
    return [{ ...row, receivedAt: new Date(row.receivedAt) }];
  }
  if (isObject(entry) && !("event" in entry) && isBatch(entry)) return rowsOf(entry as unknown as QueuedBatch);
  throw new MalformedBatch("not a batch: a field the writer needs is missing or of the wrong type");
}

/**
 * The events of what a log holds: batches, or single events (QueueRow, as JSON) as versions before
 * batches appended them to a JetStream stream (still there when the collectors were upgraded).
 */
export function rowsOfLogged(entries: unknown): QueueRow[] {
  if (!Array.isArray(entries)) throw new MalformedBatch("not a batch: the message is not a JSON array");
  return entries.flatMap(rowsOfEntry);
}
