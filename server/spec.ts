// The contracts, each read once: spec/openapi.yaml (the partner API) and spec/collector.yaml
// (the tracking script and collector).
import { readFileSync } from "node:fs";
import path from "node:path";
import { parse } from "yaml";
import type { OpenAPIV3 } from "express-openapi-validator/dist/framework/types.js";
import { fromRoot } from "./paths.ts";

const specDir = fromRoot("spec");
export const specPath = path.join(specDir, "openapi.yaml");
export const collectorSpecPath = path.join(specDir, "collector.yaml");

const cached = new Map<string, OpenAPIV3.DocumentV3_1>();

function load(file: string): OpenAPIV3.DocumentV3_1 {
  let document = cached.get(file);
  if (!document) {
    document = parse(readFileSync(file, "utf8")) as OpenAPIV3.DocumentV3_1;
    cached.set(file, document);
  }
  return structuredClone(document);
}

/** A fresh copy each call: the validator annotates the document it is given. */
export function loadSpec(): OpenAPIV3.DocumentV3_1 {
  return load(specPath);
}

/** spec/collector.yaml, a fresh copy each call. */
export function loadCollectorSpec(): OpenAPIV3.DocumentV3_1 {
  return load(collectorSpecPath);
}
