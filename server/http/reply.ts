// A text answer written in one step: the status line, Content-Type (with charset, as Express's
// res.send sets it) and Content-Length, then the body as a string, which Node writes together
// with the headers. Express's res.json/res.send would look up app settings, parse the
// Content-Type it just set, and turn a body of 1,000 characters or more into a Buffer written
// apart from the headers.
import type { ServerResponse } from "node:http";

export function sendText(res: ServerResponse, status: number, mediaType: string, text: string): void {
  res.writeHead(status, { "Content-Type": `${mediaType}; charset=utf-8`, "Content-Length": Buffer.byteLength(text) });
  res.end(text);
}

export const sendJson = (res: ServerResponse, status: number, body: unknown): void => sendText(res, status, "application/json", JSON.stringify(body));
