// The invited person's accept page, outside the partner spec (no API key: the link's token is the
// credential). GET /invitations/accept shows a page with a button (a GET changes nothing, so mail
// scanners that open links do not accept), and its POST accepts (server/notify/invitations.ts).
import express from "express";
import { ACCEPT_PATH, type acceptInvitation, escapeHtml, type openInvitation } from "../notify/invitations.ts";

const page = (title: string, body: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head><body><h1>${escapeHtml(title)}</h1>${body}</body></html>`;

const invalid = () => page("This invitation link does not work", "<p>It was used already, has expired, or a newer invitation replaced it. Ask an admin of the account to resend the invitation.</p>");

/** GET shows the page with the accept button; POST (form field `token`) accepts: 200, or 410 when the link does not work. */
export interface InvitationLinks {
  open(token: string): ReturnType<typeof openInvitation>;
  accept(token: string): ReturnType<typeof acceptInvitation>;
}

export function invitationRoutes(links: InvitationLinks): express.Router {
  const router = express.Router();
  router.get(ACCEPT_PATH, async (req, res, next) => {
    try {
      const token = typeof req.query.token === "string" ? req.query.token : "";
      res.set("cache-control", "no-store").set("referrer-policy", "no-referrer").type("html");
      const open = await links.open(token);
      if (!open) return void res.status(410).send(invalid());
      res.send(
        page(
          `Join ${open.member.account.name}`,
          `<form method="post" action="${ACCEPT_PATH}"><input type="hidden" name="token" value="${escapeHtml(token)}"><button type="submit">Accept the invitation</button></form>`,
        ),
      );
    } catch (error) {
      next(error);
    }
  });
  router.post(ACCEPT_PATH, express.urlencoded({ extended: false, limit: "4kb" }), async (req, res, next) => {
    try {
      const token = typeof req.body?.token === "string" ? (req.body.token as string) : "";
      res.set("cache-control", "no-store").type("html");
      const accepted = await links.accept(token);
      if (!accepted) return void res.status(410).send(invalid());
      res.send(page(`Welcome to ${accepted.accountName}`, "<p>Your invitation is accepted: your membership is active.</p>"));
    } catch (error) {
      next(error);
    }
  });
  return router;
}
