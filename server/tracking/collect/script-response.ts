// GET /t.js as a CDN and a browser expect it: compressed when the request accepts it (brotli, else
// gzip), with a strong ETag per representation (a 304 to If-None-Match), `Vary: Accept-Encoding`
// and `Cache-Control: public, max-age=<settings TTL>`. Every page load of every tracked site
// fetches it, so each distinct script (the code with one dataset's settings) is compressed once,
// when it is first asked for, and kept; a settings change makes a new script (a new ETag).
import { createHash } from "node:crypto";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";
import type { Request, Response } from "express";

export type ScriptEncoding = "br" | "gzip" | "identity";

/** One script in each encoding, and its ETags. */
interface EncodedScript {
  bodies: Record<ScriptEncoding, Buffer>;
  etags: Record<ScriptEncoding, string>;
}

/**
 * Scripts kept compressed: one per dataset's settings in use. Past it the cache starts again (an
 * instance serving more datasets than this compresses some twice, a fraction of a millisecond each).
 */
const CACHED_SCRIPTS = 5_000;
const encoded = new Map<string, EncodedScript>();

/**
 * Brotli's quality: 5 makes the 7,736-byte script 2,666 bytes in 0.3 ms; 11 makes it 2,443 bytes
 * but blocks the event loop 23 ms per script (gzip -9: 2,837 bytes, 0.75 ms; tsx, 20 runs each,
 * on the shared machine). Each dataset's first request pays it, so the cheap one.
 */
const BROTLI_OPTIONS = { params: { [constants.BROTLI_PARAM_QUALITY]: 5, [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT } };

function encode(script: string): EncodedScript {
  const identity = Buffer.from(script, "utf8");
  const hash = createHash("sha256").update(identity).digest("base64url").slice(0, 27);
  return {
    bodies: { identity, gzip: gzipSync(identity, { level: 9 }), br: brotliCompressSync(identity, BROTLI_OPTIONS) },
    // a strong ETag names one representation: the encodings' bytes differ, so do their tags
    etags: { identity: `"${hash}"`, gzip: `"${hash}-gzip"`, br: `"${hash}-br"` },
  };
}

export function encodedScript(script: string): EncodedScript {
  let entry = encoded.get(script);
  if (!entry) {
    if (encoded.size >= CACHED_SCRIPTS) encoded.clear();
    entry = encode(script);
    encoded.set(script, entry);
  }
  return entry;
}

/** The encoding to send for an Accept-Encoding header: br, else gzip, else none (a q=0 refuses one). */
export function chosenEncoding(acceptEncoding: string | undefined): ScriptEncoding {
  const accepted = new Set<string>();
  for (const part of (acceptEncoding ?? "").toLowerCase().split(",")) {
    const [coding = "", ...params] = part.split(";").map((s) => s.trim());
    const q = params.find((p) => p.startsWith("q="));
    if (coding && !(q && Number(q.slice(2)) === 0)) accepted.add(coding);
  }
  if (accepted.has("br")) return "br";
  if (accepted.has("gzip") || accepted.has("*")) return "gzip";
  return "identity";
}

/** Does If-None-Match name this ETag (or `*`)? Weak comparison, as RFC 9110 asks for If-None-Match. */
function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  const tags = ifNoneMatch.split(",").map((tag) => tag.trim().replace(/^W\//, ""));
  return tags.includes("*") || tags.includes(etag);
}

/** Answers with the script: 304 when the request already holds this representation, else its bytes. */
export function sendScript(req: Request, res: Response, script: string, maxAgeSeconds: number): void {
  const { bodies, etags } = encodedScript(script);
  const encoding = chosenEncoding(req.get("accept-encoding"));
  res.setHeader("Cache-Control", `public, max-age=${maxAgeSeconds}`);
  res.vary("Accept-Encoding");
  res.setHeader("ETag", etags[encoding]);
  if (matches(req.get("if-none-match"), etags[encoding])) {
    res.status(304).end();
    return;
  }
  res.type("application/javascript");
  if (encoding !== "identity") res.setHeader("Content-Encoding", encoding);
  res.send(bodies[encoding]);
}
