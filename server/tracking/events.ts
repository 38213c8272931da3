// What the script sends (a batch of events), its limits, and what the collector queues for the
// writer: the event resolved, its sensitive form fields removed and its address masked when asked.
import { createHash } from "node:crypto";
import { z } from "zod";
import type { NetworkType } from "./network-class.ts";

export const LIMITS = {
  /** Events per batch; a longer batch is refused whole. */
  events: 50,
  /** Largest request body in bytes (POST /collect). */
  bodyBytes: 65_536,
  url: 2048,
  title: 512,
  utm: 256,
  formFields: 50,
  fieldKey: 128,
  fieldValue: 1000,
} as const;

/** Absent from a cookieless dataset's script: the collector derives it (cookieless.ts); required otherwise. */
const visitorId = z.string().regex(/^[A-Za-z0-9_-]{8,64}$/, "8 to 64 characters of A-Z, a-z, 0-9, _ and -").optional();
const url = z.string().min(1).max(LIMITS.url);
const utmValue = z.string().max(LIMITS.utm);

const pageView = z.strictObject({
  type: z.literal("pageview"),
  visitorId,
  url,
  referrer: z.string().max(LIMITS.url).optional(),
  title: z.string().max(LIMITS.title).optional(),
  utm: z
    .strictObject({ source: utmValue, medium: utmValue, campaign: utmValue, term: utmValue, content: utmValue })
    .partial()
    .optional(),
});

const form = z.strictObject({
  type: z.literal("form"),
  visitorId,
  url,
  /** Filled in and left without submitting (sent only with partialFormTracking). */
  partial: z.boolean().optional(),
  fields: z
    .record(z.string().min(1).max(LIMITS.fieldKey), z.string().max(LIMITS.fieldValue))
    .refine((fields) => Object.keys(fields).length <= LIMITS.formFields, `at most ${LIMITS.formFields} fields`),
});

export const batchSchema = z.strictObject({
  events: z.array(z.discriminatedUnion("type", [pageView, form])).min(1).max(LIMITS.events),
});

export type Batch = z.infer<typeof batchSchema>;
export type TrackedEvent = Batch["events"][number];
export type PageViewEvent = Extract<TrackedEvent, { type: "pageview" }>;
export type FormEvent = Extract<TrackedEvent, { type: "form" }>;

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
