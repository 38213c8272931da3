// One webhook attempt over HTTP: signed with the standardwebhooks package, POSTed as JSON through
// the address guard's agents (public addresses only unless the test switch allows others), with a
// hard timeout and no redirects. Nothing of the secret or the body reaches the outcome.
import http from "node:http";
import https from "node:https";
import { Webhook } from "standardwebhooks";
import { NonPublicAddressError, outboundAgents } from "../security/address-guard.ts";

export type AttemptErrorClass = "timeout" | "connection" | "non_public_address" | "tls" | "redirect" | "http_status";

export interface AttemptOutcome {
  ok: boolean;
  statusCode: number | null;
  durationMs: number;
  errorClass: AttemptErrorClass | null;
  /** A Retry-After of the answer, as the time it names. */
  retryAt?: Date;
}

export interface SendOptions {
  timeoutMs: number;
  allowPrivateAddresses: boolean;
  now: () => Date;
}

export interface SignedRequest {
  url: string;
  /** webhook-id: the delivery id, the same on every attempt. */
  id: string;
  secret: string;
  /** The exact bytes signed and sent. */
  body: string;
}

/** `Retry-After` as seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now: Date): Date | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return new Date(now.getTime() + Number(trimmed) * 1000);
  const at = Date.parse(trimmed);
  return Number.isFinite(at) ? new Date(Math.max(at, now.getTime())) : undefined;
}

function classify(error: unknown): AttemptErrorClass {
  if (error instanceof NonPublicAddressError) return "non_public_address";
  const code = (error as NodeJS.ErrnoException | undefined)?.code ?? "";
  if (code === "ETIMEDOUT" || code === "WEBHOOK_TIMEOUT") return "timeout";
  if (/^(ERR_TLS|CERT_|UNABLE_TO|DEPTH_ZERO|SELF_SIGNED|ERR_SSL)/.test(code) || /certificate|ssl|tls/i.test(String((error as Error)?.message))) return "tls";
  return "connection";
}

export function createSender({ timeoutMs, allowPrivateAddresses, now }: SendOptions) {
  const { httpAgent, httpsAgent } = outboundAgents({ allowPrivateAddresses });
  return async function send(request: SignedRequest): Promise<AttemptOutcome> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const at = now();
    const headers = {
      "content-type": "application/json",
      "user-agent": "lead-intel-webhooks/1",
      "webhook-id": request.id,
      "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
      "webhook-signature": new Webhook(request.secret).sign(request.id, at, request.body),
    };
    const url = new URL(request.url);
    const client = url.protocol === "https:" ? https : http;
    return new Promise<AttemptOutcome>((resolve) => {
      let settled = false;
      const finish = (outcome: AttemptOutcome) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(outcome);
      };
      const timer = setTimeout(() => {
        const error = Object.assign(new Error("webhook attempt timed out"), { code: "WEBHOOK_TIMEOUT" });
        req?.destroy(error);
        finish({ ok: false, statusCode: null, durationMs: elapsed(), errorClass: "timeout" });
      }, timeoutMs);
      let req: http.ClientRequest | undefined;
      // the guard refuses a literal non-public address synchronously, while connecting
      try {
        req = client.request(
          url,
          {
            method: "POST",
            agent: url.protocol === "https:" ? httpsAgent : httpAgent,
            headers: { ...headers, "content-length": Buffer.byteLength(request.body) },
          },
          (res) => {
            const status = res.statusCode ?? 0;
            // the answer's body is not kept; read it so the socket is released
            res.resume();
            res.on("error", () => {});
            const ok = status >= 200 && status < 300;
            const errorClass: AttemptErrorClass | null = ok ? null : status >= 300 && status < 400 ? "redirect" : "http_status";
            const retryAfter = ok ? undefined : parseRetryAfter(res.headers["retry-after"], now());
            res.on("end", () => finish({ ok, statusCode: status, durationMs: elapsed(), errorClass, retryAt: retryAfter }));
            res.on("close", () => finish({ ok, statusCode: status, durationMs: elapsed(), errorClass, retryAt: retryAfter }));
          },
        );
      } catch (error) {
        finish({ ok: false, statusCode: null, durationMs: elapsed(), errorClass: classify(error) });
        return;
      }
      req.on("error", (error) => finish({ ok: false, statusCode: null, durationMs: elapsed(), errorClass: classify(error) }));
      req.end(request.body);
    });
  };
}

export type Sender = ReturnType<typeof createSender>;
