// A curl command per operation, built from the operation's own examples (parameter-level
// `example`s and the request body's example): Redoc shows them as `x-codeSamples`, so the
// reference page's commands can never drift from the documented examples.

type Json = Record<string, unknown>;

interface Parameter {
  name: string;
  in: "query" | "path" | "header" | "cookie";
  required?: boolean;
  example?: unknown;
  examples?: Record<string, { value?: unknown }>;
  schema?: { example?: unknown };
  content?: Record<string, { example?: unknown }>;
}

export interface CodeSample {
  lang: string;
  label: string;
  source: string;
}

const methods = ["get", "put", "post", "delete", "patch"] as const;

/** `#/components/parameters/X` and the like, resolved within the document. */
function resolve<T>(document: Json, value: unknown): T {
  const ref = (value as { $ref?: unknown } | undefined)?.$ref;
  if (typeof ref !== "string" || !ref.startsWith("#/")) return value as T;
  const target = ref
    .slice(2)
    .split("/")
    .reduce<unknown>((node, key) => (node as Json | undefined)?.[key.replace(/~1/g, "/").replace(/~0/g, "~")], document);
  return resolve<T>(document, target);
}

/** The example of a parameter or media type: `example`, else the first of `examples`. */
function exampleOf(holder: { example?: unknown; examples?: Record<string, { value?: unknown }> } | undefined): unknown {
  if (holder === undefined) return undefined;
  if (holder.example !== undefined) return holder.example;
  const first = Object.values(holder.examples ?? {})[0];
  return first?.value;
}

function parameterExample(document: Json, parameter: Parameter): unknown {
  const media = parameter.content ? Object.values(parameter.content)[0] : undefined;
  const value =
    exampleOf(parameter) ?? exampleOf(media) ?? resolve<{ example?: unknown } | undefined>(document, parameter.schema)?.example;
  return value ?? `<${parameter.name}>`;
}

const asText = (value: unknown) => (typeof value === "string" ? value : JSON.stringify(value));
/** Single-quoted for POSIX shells. */
const shellQuote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

/** The curl command of one operation; `baseUrl` has no trailing slash. */
export function curlSample(document: Json, baseUrl: string, pathTemplate: string, method: string, operation: Json): string {
  const pathItem = (document.paths as Record<string, Json>)[pathTemplate] ?? {};
  const declared = [...((pathItem.parameters as unknown[] | undefined) ?? []), ...((operation.parameters as unknown[] | undefined) ?? [])];
  const parameters = declared.map((p) => resolve<Parameter>(document, p));
  const path = pathTemplate.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const parameter = parameters.find((p) => p.in === "path" && p.name === name);
    return encodeURIComponent(asText(parameter ? parameterExample(document, parameter) : `<${name}>`));
  });
  const query = new URLSearchParams();
  for (const p of parameters) if (p.in === "query" && p.required) query.append(p.name, asText(parameterExample(document, p)));
  // The API takes a raw `@` in every e-mail parameter, and it reads better.
  const search = query.size ? `?${query.toString().replace(/%40/g, "@")}` : "";
  const lines = [`curl -s${method === "get" ? "" : ` -X ${method.toUpperCase()}`} ${shellQuote(baseUrl + path + search)}`];
  const security = (operation.security ?? document.security) as unknown[] | undefined;
  if (security?.length) lines.push(`-H "x-api-key: $API_KEY"`);
  for (const p of parameters) {
    if (p.in === "header" && p.name.toLowerCase() !== "x-api-key") lines.push(`-H ${shellQuote(`${p.name}: ${asText(parameterExample(document, p))}`)}`);
  }
  const body = resolve<{ content?: Record<string, { example?: unknown; schema?: unknown }> } | undefined>(document, operation.requestBody);
  const json = body?.content?.["application/json"];
  if (json) {
    const example = exampleOf(json) ?? resolve<{ example?: unknown } | undefined>(document, json.schema)?.example ?? {};
    lines.push(`-H "content-type: application/json"`, `-d ${shellQuote(JSON.stringify(example))}`);
  }
  return lines.join(" \\\n  ");
}

/** A copy of the document whose every operation carries its curl command as `x-codeSamples`. */
export function withCurlSamples(document: Json, baseUrl: string): Json {
  const copy = structuredClone(document);
  for (const [pathTemplate, item] of Object.entries((copy.paths ?? {}) as Record<string, Json>)) {
    for (const method of methods) {
      const operation = item[method] as Json | undefined;
      if (!operation) continue;
      const sample: CodeSample = { lang: "Shell", label: "curl", source: curlSample(copy, baseUrl, pathTemplate, method, operation) };
      operation["x-codeSamples"] = [sample, ...((operation["x-codeSamples"] as CodeSample[] | undefined) ?? [])];
    }
  }
  return copy;
}
