// Handlers are typed from the generated contract: one map keyed by operationId, so the compiler
// refuses a missing handler, and routes are registered from the spec's own paths.
import express, { type Request, type RequestHandler, type Response, type Router } from "express";
import type { operations } from "../../generated/openapi.ts";
import { type Contract, type Operation, type OperationId, operationsOf, type SpecDocument } from "../contract.ts";
import type { QueryOf, WithDefaults } from "../domain/types.ts";
import type { Auth } from "./auth.ts";
import { BadRequestError, MethodNotAllowedError, NotFoundError, ResponseViolation } from "./errors.ts";
import type { ResponseCheck } from "./response-check.ts";
import { malformedPathParameters } from "./form-encoding.ts";
import { sendJson } from "./reply.ts";
import { requestValidator, type ValidatedRequest } from "./validation.ts";

export type { OperationId } from "../contract.ts";

type Parameters<K extends OperationId> = operations[K]["parameters"];
type Defined<T> = Exclude<T, undefined>;
export type { QueryOf } from "../domain/types.ts";
export type PathOf<K extends OperationId> = Defined<Parameters<K>["path"]>;
export type HeaderOf<K extends OperationId> = Defined<Parameters<K>["header"]>;
export type BodyOf<K extends OperationId> = operations[K] extends {
  requestBody: { content: { "application/json": infer B } };
}
  ? WithDefaults<B>
  : undefined;

type Responses<K extends OperationId> = operations[K]["responses"];
type SuccessStatus<K extends OperationId> = Extract<keyof Responses<K>, 200 | 201 | 202 | 204>;
type JsonOf<R> = R extends { content: { "application/json": infer B } } ? B : never;

/** What a handler answers: one of the operation's documented success statuses and its body. */
export type Reply<K extends OperationId> = {
  [S in SuccessStatus<K>]: [JsonOf<Responses<K>[S]>] extends [never]
    ? { status: S; body?: undefined }
    : { status: S; body: JsonOf<Responses<K>[S]> };
}[SuccessStatus<K>];

export interface OperationContext<K extends OperationId> {
  /** The operation this request is (known from its route). */
  operationId: K;
  query: QueryOf<K>;
  path: PathOf<K>;
  body: BodyOf<K>;
  /** A header parameter the spec declares for the operation (validated). */
  header: (name: keyof HeaderOf<K> & string) => string | undefined;
  auth: Auth;
  requestId: string;
}

export type Handler<K extends OperationId> = (ctx: OperationContext<K>) => Promise<Reply<K>>;
export type OperationHandlers = { [K in OperationId]: Handler<K> };

/** What each operation's chain runs before validation: rate limit, key, limits, JSON (server/app.ts). */
export interface OperationChain {
  /** Runs first for every operation, and for requests no operation matches. */
  guard: RequestHandler[];
  /** After the guard, before validation (the body is read here). */
  input: RequestHandler[];
  /** Checks a handler's answer against the contract; returns what is wrong, or undefined. */
  check?: ResponseCheck;
}

/**
 * Mounts, per spec operation, its whole chain: operation context -> guard (rate limit, key) ->
 * input (limits, JSON) -> validation -> handler. After a path's operations, the same guard and
 * then 405 with `Allow` for its other methods; `notFound` answers paths of no operation.
 */
export function registerOperations(router: Router, contract: Contract, handlers: OperationHandlers, chain: OperationChain, first: OperationId[] = []): void {
  const byPath = new Map<string, Operation[]>();
  for (const op of contract.operations) byPath.set(op.path, [...(byPath.get(op.path) ?? []), op]);
  for (const path of hotFirst([...byPath.keys()], first.map((id) => contract.operations.find((op) => op.operationId === id)!.path))) {
    const ops = byPath.get(path)!;
    const expressPath = path.replace(/\{([^}]+)\}/g, ":$1");
    for (const op of ops) {
      router[op.method](expressPath, operationContext(op.operationId), ...chain.guard, ...chain.input, ...requestValidator(contract, op), handle(op, handlers, chain.check));
    }
    const allow = ops.map((op) => op.method.toUpperCase()).join(", ");
    router.all(expressPath, ...chain.guard, () => {
      throw new MethodNotAllowedError(allow);
    });
  }
}

/**
 * The paths in the router's order, `hot` ones first: the router tries each registered route in
 * turn, so the busiest operation (the paid look-up) is matched without testing every other path
 * before it. Only a literal path no other path's template also matches is moved (where two match,
 * the spec's order decides, as before).
 */
export function hotFirst(paths: string[], hot: string[]): string[] {
  const matcher = (template: string) => new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[^}]+\}/g, "[^/]+")}$`);
  for (const path of hot) {
    const overlapping = paths.filter((other) => other !== path && matcher(other).test(path));
    if (path.includes("{") || overlapping.length) throw new Error(`${path} cannot be routed first: ${overlapping.join(", ") || "it has a template"} also matches`);
  }
  return [...new Set([...hot, ...paths])];
}

/**
 * A path that is not percent-encoded UTF-8 cannot be matched by the router (it fails decoding the
 * parameters before any handler runs). Answered here, before the router: the guard first (429,
 * 401 win as everywhere), then 400 naming the parameter under the operation whose template the
 * raw path fits.
 */
export function undecodablePath(contract: Contract, chain: OperationChain): RequestHandler {
  const guard = express.Router();
  guard.use(...chain.guard);
  return (req, res, next) => {
    const rawPath = req.originalUrl.split("?")[0]!;
    if (decodes(rawPath)) return next();
    const { operationId, details } = malformedPathParameters(contract, rawPath);
    if (operationId) operationContext(operationId as OperationId)(req, res, () => {});
    guard(req, res, (error?: unknown) => {
      if (error) return next(error);
      next(new BadRequestError(`Invalid request: ${details.map((d) => `${d.location} ${d.field} ${d.message}`).join("; ")}`, details));
    });
  };
}

function decodes(text: string): boolean {
  try {
    decodeURIComponent(text);
    return true;
  } catch {
    return false;
  }
}

/** Requests no operation matches: the guard first (401 before 404), then 404. */
export function noOperation(chain: OperationChain): RequestHandler[] {
  return [
    ...chain.guard,
    () => {
      throw new NotFoundError("No such path");
    },
  ];
}

function operationContext(operationId: OperationId): RequestHandler {
  return (_req, res, next) => {
    res.locals.operationId = operationId; // the request's logger carries it (request-context.ts)
    next();
  };
}

type AnyHandler = (ctx: OperationContext<OperationId>) => Promise<{ status: number; body?: unknown }>;

function handle(op: Operation, handlers: OperationHandlers, check: ResponseCheck | undefined): RequestHandler {
  const handler = handlers[op.operationId] as AnyHandler | undefined;
  if (!handler) throw new Error(`spec operation ${op.operationId} has no handler`);
  return async (req: Request, res: Response) => {
    const input = res.locals.input as ValidatedRequest;
    const reply = await handler({
      operationId: op.operationId,
      query: input.query as never,
      path: input.path as never,
      body: input.body as never,
      header: (name: string) => req.get(name),
      auth: res.locals.auth as Auth,
      requestId: res.locals.requestId as string,
    });
    const problem = check?.(op.operationId, reply.status, "application/json", reply.body);
    if (problem) throw new ResponseViolation(`${op.operationId} answered ${reply.status}: ${problem}`);
    if (reply.body === undefined) res.status(reply.status).end();
    else sendJson(res, reply.status, reply.body);
  };
}

export interface SpecRoute {
  method: Operation["method"];
  path: string;
  operationId: OperationId;
}

/** The spec's operations as routes (a literal path segment before a template). */
export function routesOf(spec: object): SpecRoute[] {
  return operationsOf(spec as SpecDocument).map(({ method, path, operationId }) => ({ method, path, operationId }));
}
