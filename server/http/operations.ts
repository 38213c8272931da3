// Handlers are typed from the generated contract: one map keyed by operationId, so the compiler
// refuses a missing handler, and routes are registered from the spec's own paths.
import type { Request, Response, Router } from "express";
import type { operations } from "../../generated/openapi.ts";
import type { Auth } from "./auth.ts";

export type OperationId = keyof operations;

type Parameters<K extends OperationId> = operations[K]["parameters"];
type Defined<T> = Exclude<T, undefined>;
export type QueryOf<K extends OperationId> = Defined<Parameters<K>["query"]>;
export type PathOf<K extends OperationId> = Defined<Parameters<K>["path"]>;
export type HeaderOf<K extends OperationId> = Defined<Parameters<K>["header"]>;
export type BodyOf<K extends OperationId> = operations[K] extends {
  requestBody: { content: { "application/json": infer B } };
}
  ? B
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

/** The subset of the OpenAPI document that routing needs. */
export interface SpecPaths {
  paths?: Record<string, object>;
}

const methods = ["get", "put", "post", "delete", "patch"] as const;

export interface SpecRoute {
  method: (typeof methods)[number];
  path: string;
  operationId: OperationId;
}

export function routesOf(spec: SpecPaths): SpecRoute[] {
  const routes: SpecRoute[] = [];
  for (const [path, item] of Object.entries(spec.paths ?? {})) {
    for (const method of methods) {
      const operationId = (item as Record<string, { operationId?: string } | undefined>)[method]?.operationId;
      if (operationId) routes.push({ method, path, operationId: operationId as OperationId });
    }
  }
  // A literal segment wins over a template: `/v1/segments/user` before `/v1/segments/{segmentId}`.
  const rank = (path: string) => path.split("/").map((s) => (s.startsWith("{") ? "1" : "0")).join("");
  return routes.sort((a, b) => rank(a.path).localeCompare(rank(b.path)));
}

/** Finds the operation a request addresses, from the spec alone (also for requests that fail before validation). */
export function operationMatcher(spec: SpecPaths): (method: string, path: string) => OperationId | undefined {
  const matchers = routesOf(spec).map((route) => ({
    ...route,
    pattern: new RegExp(`^${route.path.replace(/\{[^}]+\}/g, "[^/]+")}/?$`),
  }));
  return (method, path) =>
    matchers.find((m) => m.method === method.toLowerCase() && m.pattern.test(path))?.operationId;
}

export function registerOperations(router: Router, spec: SpecPaths, handlers: OperationHandlers): void {
  for (const route of routesOf(spec)) {
    const handler = handlers[route.operationId] as
      | ((ctx: OperationContext<OperationId>) => Promise<{ status: number; body?: unknown }>)
      | undefined;
    if (!handler) throw new Error(`spec operation ${route.operationId} has no handler`);
    const expressPath = route.path.replace(/\{([^}]+)\}/g, ":$1");
    router[route.method](expressPath, async (req: Request, res: Response) => {
      const reply = await handler({
        query: req.query as never,
        // the validator has coerced path parameters to their schema types
        path: (req.openapi?.pathParams ?? req.params) as never,
        body: req.body,
        header: (name: string) => req.get(name),
        auth: res.locals.auth as Auth,
        requestId: res.locals.requestId as string,
      });
      res.status(reply.status);
      if (reply.body === undefined) res.end();
      else res.json(reply.body);
    });
  }
}
