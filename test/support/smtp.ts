// A real SMTP server on loopback (the smtp-server package) that keeps every message it receives,
// with a small MIME reader for what nodemailer writes (multipart, quoted-printable, base64).
import type { AddressInfo } from "node:net";
import { SMTPServer } from "smtp-server";

export interface ReceivedPart {
  contentType: string;
  filename?: string;
  content: string;
}

export interface ReceivedMail {
  envelopeTo: string[];
  headers: Map<string, string>;
  subject: string;
  messageId: string;
  text: string;
  html: string;
  attachments: ReceivedPart[];
  raw: string;
}

export interface TestSmtpServer {
  url: string;
  messages: ReceivedMail[];
  /** Every message so far once there are at least `count`, else throws: a check for `eventually(() => smtp.received(n))`. */
  received(count: number): ReceivedMail[];
  close(): Promise<void>;
}

function parseHeaders(block: string): Map<string, string> {
  const headers = new Map<string, string>();
  for (const line of block.replace(/\r?\n[ \t]+/g, " ").split(/\r?\n/)) {
    const colon = line.indexOf(":");
    if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  return headers;
}

function decodeWords(value: string): string {
  return value.replace(/=\?([^?]+)\?([QqBb])\?([^?]*)\?=\s*/g, (_, _charset: string, encoding: string, text: string) =>
    encoding.toUpperCase() === "B"
      ? Buffer.from(text, "base64").toString("utf8")
      : Buffer.from(text.replace(/_/g, " ").replace(/=([0-9A-F]{2})/gi, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16))), "latin1").toString("utf8"),
  );
}

function decodeBody(body: string, encoding: string | undefined): string {
  switch ((encoding ?? "").toLowerCase()) {
    case "base64":
      return Buffer.from(body.replace(/\s+/g, ""), "base64").toString("utf8");
    case "quoted-printable": {
      const bytes = body.replace(/=\r?\n/g, "").replace(/=([0-9A-F]{2})/gi, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));
      return Buffer.from(bytes, "latin1").toString("utf8");
    }
    default:
      return body;
  }
}

function split(raw: string): { headers: Map<string, string>; body: string } {
  const at = raw.search(/\r?\n\r?\n/);
  if (at < 0) return { headers: parseHeaders(raw), body: "" };
  const separator = raw.slice(at).match(/^\r?\n\r?\n/)![0];
  return { headers: parseHeaders(raw.slice(0, at)), body: raw.slice(at + separator.length) };
}

function leaves(raw: string): ReceivedPart[] {
  const { headers, body } = split(raw);
  const type = headers.get("content-type") ?? "text/plain";
  const boundary = /boundary="?([^";]+)"?/i.exec(type)?.[1];
  if (/^multipart\//i.test(type) && boundary) {
    return body
      .split(`--${boundary}`)
      .slice(1)
      .filter((part) => !part.startsWith("--"))
      .flatMap((part) => leaves(part.replace(/^\r?\n/, "")));
  }
  const disposition = headers.get("content-disposition") ?? "";
  const filename = /filename="?([^";]+)"?/i.exec(disposition)?.[1];
  return [{ contentType: type.split(";")[0]!.trim().toLowerCase(), filename, content: decodeBody(body, headers.get("content-transfer-encoding")) }];
}

export function parseMail(raw: string, envelopeTo: string[] = []): ReceivedMail {
  const { headers } = split(raw);
  const parts = leaves(raw);
  const inline = parts.filter((p) => !p.filename);
  return {
    envelopeTo,
    headers,
    subject: decodeWords(headers.get("subject") ?? ""),
    messageId: headers.get("message-id") ?? "",
    text: inline.find((p) => p.contentType === "text/plain")?.content ?? "",
    html: inline.find((p) => p.contentType === "text/html")?.content ?? "",
    attachments: parts.filter((p) => p.filename),
    raw,
  };
}

export async function startSmtpServer(): Promise<TestSmtpServer> {
  const messages: ReceivedMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => {
        messages.push(parseMail(Buffer.concat(chunks).toString("utf8"), session.envelope.rcptTo.map((r) => r.address)));
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const port = (server.server.address() as AddressInfo).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    messages,
    received(count) {
      if (messages.length < count) throw new Error(`expected ${count} messages, got ${messages.length}`);
      return messages.slice();
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
