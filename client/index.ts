// The typed partner client: paths, parameters, bodies and responses all come from the spec.
//
//   const api = createPartnerClient({ baseUrl: "https://api.leadintel.io", apiKey: process.env.LEADINTEL_KEY! });
//   const { data, error } = await api.GET("/v1/user-datasets", { params: { query: { accountId, email } } });
//
// Built on openapi-fetch; the key, the Idempotency-Key of POSTs and retries of 429/503 are
// openapi-fetch middleware (`client.use`), also exported for clients composed by hand.
import createClient, { type Client, type ClientOptions, type Middleware } from "openapi-fetch";
// `.js`: the published declarations keep this specifier, and there it names openapi.d.ts.
import type { components, operations, paths } from "../generated/openapi-client.js";

export type { components, operations, paths };
export type { Middleware };
export type PartnerClient = Client<paths>;

export interface RetryOptions {
  /** Attempts in all, the first included (default 3; 1 turns retries off). */
  maxAttempts?: number;
  /**
   * The longest wait before one retry, in seconds (default 30). A `Retry-After` longer than this
   * is not waited for: the 429 or 503 is returned to the caller at once.
   */
  maxWaitSeconds?: number;
  /** The wait before the first retry when the answer has no `Retry-After` (default 1); doubles per retry. */
  backoffSeconds?: number;
}

export interface PartnerClientOptions extends Omit<ClientOptions, "baseUrl"> {
  /** Where the API is served, without a trailing path (e.g. https://api.leadintel.io). */
  baseUrl: string;
  /** The account's API key, sent as `x-api-key` on every request. */
  apiKey: string;
  /** Retries of 429 and 503 (`false`: none). */
  retry?: RetryOptions | false;
}

/** Sends the key on every request (whatever other headers the caller gives, in whatever form). */
export function apiKeyMiddleware(apiKey: string): Middleware {
  return {
    onRequest({ request }) {
      request.headers.set("x-api-key", apiKey);
    },
  };
}

/**
 * Gives every POST without an `Idempotency-Key` a random one, before the retry middleware keeps
 * a copy: all attempts of one call then carry the same key, and an operation that supports it
 * (the e-mail look-up) answers a retry from the first attempt's outcome without charging twice.
 */
export function idempotencyKeyMiddleware(newKey: () => string = () => crypto.randomUUID()): Middleware {
  return {
    onRequest({ request }) {
      if (request.method === "POST" && !request.headers.has("idempotency-key")) request.headers.set("Idempotency-Key", newKey());
    },
  };
}

const retryStatuses = new Set([429, 503]);

/** `Retry-After` in seconds (delta-seconds or an HTTP date); undefined when absent or unreadable. */
export function retryAfterSeconds(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === "") return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, (at - now) / 1000);
}

function sleep(seconds: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, seconds * 1000);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Retries 429 and 503 answers, waiting what `Retry-After` says (else an exponential backoff),
 * at most `maxAttempts` attempts and never longer than `maxWaitSeconds` per wait. A retry resends
 * the very request, headers included (so its `Idempotency-Key`); the caller gets the last answer.
 */
export function retryMiddleware({ maxAttempts = 3, maxWaitSeconds = 30, backoffSeconds = 1 }: RetryOptions = {}): Middleware {
  // Each request as it left, by openapi-fetch's request id: fetch consumes the body it sends.
  const pending = new Map<string, Request>();
  return {
    onRequest({ request, id }) {
      if (maxAttempts > 1) pending.set(id, request.clone());
    },
    async onResponse({ response, id, options }) {
      const original = pending.get(id);
      pending.delete(id);
      if (!original) return undefined;
      let answer = response;
      for (let attempt = 1; attempt < maxAttempts && retryStatuses.has(answer.status); attempt++) {
        const wait = retryAfterSeconds(answer.headers.get("retry-after")) ?? backoffSeconds * 2 ** (attempt - 1);
        if (wait > maxWaitSeconds) break;
        await answer.body?.cancel();
        await sleep(wait, original.signal);
        answer = await options.fetch(original.clone());
      }
      return answer === response ? undefined : answer;
    },
    onError({ id }) {
      pending.delete(id);
    },
  };
}

export function createPartnerClient({ baseUrl, apiKey, retry, ...rest }: PartnerClientOptions): PartnerClient {
  const client = createClient<paths>({ ...rest, baseUrl: baseUrl.replace(/\/+$/, "") });
  // onRequest runs in this order, onResponse in the reverse: the retry sees the keyed request first.
  client.use(apiKeyMiddleware(apiKey), idempotencyKeyMiddleware());
  if (retry !== false) client.use(retryMiddleware(retry));
  return client;
}
