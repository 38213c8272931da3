// Checks a response against the contract for its operation and status: the handlers' answers
// (server/http/operations.ts) and the errors (server/http/errors.ts) alike.
import type { Contract } from "../contract.ts";

/** Returns what is wrong with the body, or undefined when it matches the spec. */
export type ResponseCheck = (operationId: string, status: number, mediaType: string, body: unknown) => string | undefined;

export function responseChecker(contract: Contract): ResponseCheck {
  return (operationId, status, mediaType, body) => {
    const declared = contract.response(operationId, status);
    if (!declared) return `status ${status} is not documented for ${operationId}`;
    const content = declared.content ?? {};
    if (body === undefined) return Object.keys(content).length ? `${operationId} ${status} documents a body` : undefined;
    const media = content[mediaType] ? mediaType : "*/*";
    const schema = content[media]?.schema;
    if (!schema) return `no ${mediaType} body is documented for ${operationId} ${status}`;
    if (!schema.$ref?.startsWith("#/")) throw new Error(`response schemas must be $refs to components, got ${JSON.stringify(schema)}`);
    const validate = contract.compile(schema);
    // the contract's validator applies defaults: check a copy, never the body sent
    return validate(structuredClone(body)) ? undefined : contract.errorsText(validate.errors);
  };
}
