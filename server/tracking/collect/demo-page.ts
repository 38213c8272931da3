// GET /demo: two pages of a pretend customer website with the tracking script and a contact form,
// for a new user to click through with the demo running. When the dataset requires consent, the
// pages show a consent banner, as a consent platform would: the choice is the site's to remember
// (here in localStorage) and is told to the script on every page.
const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * GET /demo-consent.js, the banner's script (a file of its own: the pages' Content-Security-Policy
 * refuses inline scripts). It sets up the command queue, so leadIntel('consent', ...) works before
 * the async tracking script has loaded, and tells the script the choice remembered.
 */
export const demoConsentScript = `window.leadIntel = window.leadIntel || function () { (leadIntel.q = leadIntel.q || []).push(arguments) };
(function () {
  var chosen = localStorage.getItem("demo-consent");
  if (chosen) leadIntel("consent", chosen === "yes");
  document.addEventListener("DOMContentLoaded", function () {
    var banner = document.getElementById("consent");
    banner.hidden = !!chosen;
    [["consent-yes", true], ["consent-no", false]].forEach(function (choice) {
      document.getElementById(choice[0]).addEventListener("click", function () {
        localStorage.setItem("demo-consent", choice[1] ? "yes" : "no");
        leadIntel("consent", choice[1]);
        banner.hidden = true;
      });
    });
  });
})();
`;
const consentBanner = `<script src="/demo-consent.js"></script>`;
const consentDialog = `<div id="consent" role="dialog" aria-label="Consent" hidden>
  This website would like to count your visit and the organisation you visit from.
  <button type="button" id="consent-yes">Accept</button> <button type="button" id="consent-no">Decline</button>
</div>`;

/** What happened to a sent form, shown on the page the form lands on (the script sent it as the form left). */
function sentNotice({ asBot, formTracking, consentRequired }: { asBot: boolean; formTracking: boolean; consentRequired: boolean }): string {
  const text = asBot
    ? "Not recorded: this browser counts as a bot, so the script's send of the form was dropped."
    : !formTracking
      ? "Not sent: form tracking is off for this dataset (an admin turns it on with updateFormTracking)."
      : consentRequired
        ? "Sent, if you accepted the banner: it reaches the leads in a few seconds."
        : "Sent: it reaches the leads in a few seconds.";
  return `<p id="sent" role="status"><strong>${text}</strong></p>\n`;
}

export interface DemoPageOptions {
  /** The dataset asks for consent (a banner). */
  consentRequired?: boolean;
  /** The page is answered to a user agent that the collector counts as a bot (it says so). */
  asBot?: boolean;
  /** The dataset records forms (otherwise the script sends none). */
  formTracking?: boolean;
  /** The page is where the form was sent to: it confirms the send. */
  formSent?: boolean;
}

export function demoPage(datasetId: string, page: 1 | 2, { consentRequired = false, asBot = false, formTracking = true, formSent = false }: DemoPageOptions = {}): string {
  const ds = encodeURIComponent(datasetId);
  const other = page === 1 ? 2 : 1;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Demo website, page ${page}</title>
${consentRequired ? consentBanner : ""}<script src="/t.js?dataset=${ds}" async></script></head>
<body>${consentRequired ? consentDialog : ""}
<h1>Demo website: page ${page}</h1>
<p>Every page view here is sent to the collector for dataset <code>${escape(datasetId)}</code>.
Go to <a href="/demo?dataset=${ds}&amp;page=${other}">page ${other}</a>, then list the leads with the curl the service printed.</p>
<p id="bots">Headless and automated browsers (a user agent such as <code>HeadlessChrome</code>) count as
bots: their visits are dropped and record nothing. Open this page in an ordinary browser.</p>
${asBot ? `<p id="bot-warning"><strong>This browser's user agent is a bot's: the collector records nothing of this visit.</strong></p>\n` : ""}${formSent ? sentNotice({ asBot, formTracking, consentRequired }) : ""}<form method="post" action="/demo?dataset=${ds}&amp;page=2">
  <label>E-mail <input type="email" name="email" autocomplete="email"></label>
  <label>Company <input name="company"></label>
  <button type="submit">Send</button>
</form>
<p><small>IP geolocation by <a href="https://db-ip.com">DB-IP</a>; IP to ASN data: RouteViews and DB-IP via ip-location-db (CC BY 4.0).</small></p>
</body></html>`;
}
