// What express-openapi-validator attaches to a request it has matched to an operation.
import "express-serve-static-core";

declare module "express-serve-static-core" {
  interface Request {
    openapi?: { schema?: { operationId?: string }; pathParams?: Record<string, unknown> };
  }
}
