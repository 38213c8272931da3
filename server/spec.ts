// The contract, read once from spec/openapi.yaml.
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import type { OpenAPIV3 } from "express-openapi-validator/dist/framework/types.js";

export const specPath = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../spec/openapi.yaml");

let cached: OpenAPIV3.DocumentV3_1 | undefined;

/** A fresh copy each call: the validator annotates the document it is given. */
export function loadSpec(): OpenAPIV3.DocumentV3_1 {
  cached ??= parse(readFileSync(specPath, "utf8")) as OpenAPIV3.DocumentV3_1;
  return structuredClone(cached);
}
