// Examples a generator can use (Dredd, Prism, the reference page's curl samples): every
// operation of the contract documents has an example for each parameter (on the parameter
// itself, where Dredd looks), for its request body and for each response body (at the media
// type or on its schema); and each example is valid against its schema. An operation added
// without examples fails here.
import { readFileSync } from "node:fs";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";

type Node = Record<string, unknown>;
const methods = ["get", "put", "post", "delete", "patch"];
const pointerPart = (key: string) => key.replace(/~/g, "~0").replace(/\//g, "~1");

interface Located {
  node: Node;
  pointer: string;
}

/** What an operation's examples lack, and examples that do not match their schemas. */
function examineDocument(file: string): string[] {
  const spec = parse(readFileSync(file, "utf8")) as Node;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  ajv.addSchema(spec, "spec");
  const problems: string[] = [];

  const at = (pointer: string): Node =>
    pointer
      .slice(1)
      .split("/")
      .map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"))
      .reduce<Node>((node, key) => node[key] as Node, spec);
  const resolve = (located: Located): Located => {
    const ref = located.node.$ref;
    return typeof ref === "string" ? resolve({ node: at(ref.slice(1)), pointer: ref.slice(1) }) : located;
  };
  /** The example values held at `holder` (`example`, or every `examples` entry). */
  const examplesAt = (holder: Node): unknown[] =>
    holder.example !== undefined ? [holder.example] : Object.values((holder.examples ?? {}) as Record<string, Node>).map((e) => e.value);
  const check = (where: string, values: unknown[], schemaPointer: string | undefined) => {
    if (values.length === 0) return problems.push(`${where}: no example`);
    if (!schemaPointer) return;
    const validate = ajv.compile({ $ref: `spec#${schemaPointer}` });
    for (const value of values) if (!validate(value)) problems.push(`${where}: example does not match its schema: ${ajv.errorsText(validate.errors)}`);
  };
  /** A schema's own examples (`example`, or the JSON Schema `examples` array), following `$ref`s. */
  const schemaExamples = (schema: Located): unknown[] => {
    const { node } = resolve(schema);
    return node.example !== undefined ? [node.example] : Array.isArray(node.examples) ? node.examples : [];
  };
  /**
   * Every media type of a body, each with an example valid against its schema: the media type's
   * own, else its schema's (generators such as Prism and Dredd sample a body from its schema's example).
   */
  const checkContent = (where: string, content: Located) => {
    for (const [media, object] of Object.entries(content.node)) {
      const pointer = `${content.pointer}/${pointerPart(media)}`;
      const schema = (object as Node).schema as Node | undefined;
      const own = examplesAt(object as Node);
      const values = own.length || !schema ? own : schemaExamples({ node: schema, pointer: `${pointer}/schema` });
      check(`${where} ${media}`, values, schema ? `${pointer}/schema` : undefined);
    }
  };

  for (const [path, item] of Object.entries(spec.paths as Record<string, Node>)) {
    for (const method of methods.filter((m) => item[m])) {
      const opPointer = `/paths/${pointerPart(path)}/${method}`;
      const operation = item[method] as Node;
      const name = String(operation.operationId);
      ((operation.parameters ?? []) as Node[]).forEach((_, index) => {
        const parameter = resolve({ node: at(`${opPointer}/parameters/${index}`), pointer: `${opPointer}/parameters/${index}` });
        const where = `${name} parameter ${String(parameter.node.name)}`;
        if (parameter.node.content) checkContent(where, { node: parameter.node.content as Node, pointer: `${parameter.pointer}/content` });
        else check(where, examplesAt(parameter.node), `${parameter.pointer}/schema`);
      });
      if (operation.requestBody) {
        const body = resolve({ node: operation.requestBody as Node, pointer: `${opPointer}/requestBody` });
        checkContent(`${name} request body`, { node: body.node.content as Node, pointer: `${body.pointer}/content` });
      }
      for (const status of Object.keys(operation.responses as Node)) {
        const response = resolve({ node: at(`${opPointer}/responses/${status}`), pointer: `${opPointer}/responses/${status}` });
        if (response.node.content) checkContent(`${name} response ${status}`, { node: response.node.content as Node, pointer: `${response.pointer}/content` });
      }
    }
  }
  return problems;
}

describe("spec examples", () => {
  it.each(["spec/openapi.yaml", "spec/operator.yaml"])(
    "when %s is read, then every parameter, request body and response body of every operation has a valid example",
    (file) => {
      expect(examineDocument(file)).toEqual([]);
    },
  );
});
