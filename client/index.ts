// The typed partner client: paths, parameters, bodies and responses all come from the spec.
//
//   const api = createPartnerClient({ baseUrl: "https://api.leadintel.io", apiKey: process.env.LEADINTEL_KEY! });
//   const { data, error } = await api.GET("/v1/user-datasets", { params: { query: { accountId, email } } });
//
// Built on openapi-fetch; the key, the Idempotency-Key of POSTs and retries of 429/503 are
// openapi-fetch middleware (`client.use`), also exported for clients composed by hand.
import createClient, {
  type Client,
  type ClientOptions,
  type MaybeOptionalInit,
  type Middleware,
  type ParseAsResponse,
} from "openapi-fetch";
// `.js`: the published declarations keep this specifier, and there it names openapi.d.ts.
import type { components, operations, paths } from "../generated/openapi.js";

export type { components, operations, paths };
export type { Middleware };

type HttpMethod = "get" | "put" | "post" | "delete" | "options" | "head" | "patch" | "trace";
type Responses<Operation> = Operation extends { responses: infer R } ? R : never;
/** The documented statuses of an operation (numbers: the generated types key responses by status). */
type StatusOf<Operation> = keyof Responses<Operation> & number;
/** The body a status documents (every body of this API is JSON); undefined for none (204). */
type JsonBody<Response> = Response extends { content: { "application/json": infer Body } } ? Body : undefined;

/**
 * A call's answer, one member per status the operation documents: `status` (the answer's HTTP
 * status) narrows `data` and `error`. openapi-fetch's own answer types `error` as the union of
 * every error body whatever the status (its `response.status` is a plain number), so
 * `if (status === 429) error.retryAfterSeconds` type-checks here and not there.
 */
export type PartnerResult<Operation, Init> = {
  [S in StatusOf<Operation>]: `${S}` extends `2${string}`
    ? { status: S; data: ParseAsResponse<JsonBody<Responses<Operation>[S]>, Init>; error?: never; response: Response }
    : { status: S; data?: never; error: JsonBody<Responses<Operation>[S]>; response: Response };
}[StatusOf<Operation>];

type RequiredKeys<T> = { [K in keyof T]-?: {} extends Pick<T, K> ? never : K }[keyof T];
/** As openapi-fetch's: the options are optional when none of them is required. */
type InitParam<Init> = RequiredKeys<Init> extends never ? [(Init & { [key: string]: unknown })?] : [Init & { [key: string]: unknown }];

/** The paths that have `Method` (the generated types mark the others `?: never`). */
type PathsWith<Method extends HttpMethod> = { [Path in keyof paths]: paths[Path] extends { [M in Method]: unknown } ? Path : never }[keyof paths];

type PartnerMethod<Method extends HttpMethod> = <Path extends PathsWith<Method>, Init extends MaybeOptionalInit<paths[Path], Method>>(
  url: Path,
  ...init: InitParam<Init>
) => Promise<PartnerResult<paths[Path][Method], Init>>;

/** openapi-fetch's client whose calls also answer `status` (PartnerResult). */
export type PartnerClient = Pick<Client<paths>, "use" | "eject"> & { [Method in HttpMethod as Uppercase<Method>]: PartnerMethod<Method> };

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

const METHODS = ["GET", "PUT", "POST", "DELETE", "OPTIONS", "HEAD", "PATCH", "TRACE"] as const;

/** Each call's answer with its `status` beside `data`, `error` and `response`. */
function withStatus(client: Client<paths>): PartnerClient {
  const { request: _request, ...rest } = client;
  const methods = Object.fromEntries(
    METHODS.map((method) => {
      const call = client[method] as (...args: unknown[]) => Promise<{ response: Response }>;
      return [method, async (...args: unknown[]) => {
        const answer = await call(...args);
        return Object.assign(answer, { status: answer.response.status });
      }];
    }),
  );
  return { ...rest, ...methods } as unknown as PartnerClient;
}

export function createPartnerClient({ baseUrl, apiKey, retry, ...rest }: PartnerClientOptions): PartnerClient {
  const client = createClient<paths>({ ...rest, baseUrl: baseUrl.replace(/\/+$/, "") });
  // onRequest runs in this order, onResponse in the reverse: the retry sees the keyed request first.
  client.use(apiKeyMiddleware(apiKey), idempotencyKeyMiddleware());
  if (retry !== false) client.use(retryMiddleware(retry));
  return withStatus(client);
}
