/* Lead tracking script. Served by GET /t.js as `(function (cfg) { ... })(settings)`; plain
   JavaScript, no dependencies. cfg: { dataset, formTracking, partialFormTracking, formInputAttribute,
   secretNames, consentMode, respectDoNotTrack }. The page's command API: leadIntel('consent', true | false),
   callable before the script loads through the queue leadIntel.q. */
(function (w, d, cfg) {
  if (!cfg || w.__leadTracker) return;
  w.__leadTracker = true;
  var script = d.currentScript;
  var base = script && script.src ? script.src : location.href;
  var endpoint = new URL("/collect", base).href + (cfg.dataset ? "?dataset=" + encodeURIComponent(cfg.dataset) : "");
  var COOKIE = "_lt_vid";
  // consent given, remembered first-party until withdrawn or 13 months after it was given (395 days)
  var CONSENT = "_lt_consent", CONSENT_MAX_AGE = 395 * 86400;
  var SECURE = location.protocol === "https:" ? "; Secure" : "";
  var mode = cfg.consentMode || "none";
  // Global Privacy Control or Do Not Track: nothing is sent or stored, whatever the consent
  var optedOut = cfg.respectDoNotTrack !== false &&
    (navigator.globalPrivacyControl === true || navigator.doNotTrack === "1" || w.doNotTrack === "1");
  var tracking = false, refused = false;
  var vid; // undefined while not tracking, and always for cookieless datasets (the collector derives it)

  function visitorId() {
    var m = d.cookie.match(/(?:^|; )_lt_vid=([A-Za-z0-9_-]{8,64})/);
    var id = m ? m[1] : "";
    if (!id) {
      var bytes = new Uint8Array(16);
      (w.crypto || w.msCrypto).getRandomValues(bytes);
      for (var i = 0; i < bytes.length; i++) id += ("0" + bytes[i].toString(16)).slice(-2);
    }
    // first-party, renewed on every page: two years from the last visit
    setCookie(COOKIE, id, 63072000);
    return id;
  }
  function setCookie(name, value, maxAge) {
    d.cookie = name + "=" + value + "; path=/; max-age=" + maxAge + "; SameSite=Lax" + SECURE;
  }
  function hasCookie(name) {
    return (" " + d.cookie + ";").indexOf(" " + name + "=") >= 0;
  }
  // the visitor id and the consent remembered
  function forgetCookie() {
    if (hasCookie(COOKIE)) setCookie(COOKIE, "", 0);
    if (hasCookie(CONSENT)) setCookie(CONSENT, "", 0);
  }

  function send(events) {
    if (!tracking) return;
    var body = JSON.stringify({ events: events });
    // text/plain keeps it a "simple" CORS request: no preflight, and sendBeacon accepts it
    var blob = new Blob([body], { type: "text/plain" });
    if (navigator.sendBeacon && navigator.sendBeacon(endpoint, blob)) return;
    if (w.fetch) fetch(endpoint, { method: "POST", body: body, keepalive: true, mode: "cors", headers: { "content-type": "text/plain" } });
    else new Image().src = endpoint + (cfg.dataset ? "&" : "?") + (vid ? "v=" + vid + "&" : "") + "u=" + encodeURIComponent(location.href);
  }

  function utm() {
    var out = {}, any = false, p = new URLSearchParams(location.search);
    ["source", "medium", "campaign", "term", "content"].forEach(function (k) {
      var v = p.get("utm_" + k);
      if (v) { out[k] = v.slice(0, 256); any = true; }
    });
    return any ? out : undefined;
  }

  function start() {
    refused = false;
    if (tracking || optedOut) return;
    tracking = true;
    if (mode === "cookieless") forgetCookie();
    else vid = visitorId();
    send([{ type: "pageview", visitorId: vid, url: location.href.slice(0, 2048), referrer: d.referrer.slice(0, 2048), title: d.title.slice(0, 512), utm: utm() }]);
  }
  // withdrawal: nothing more is sent from this page, and the cookie goes
  function stop() {
    refused = true;
    tracking = false;
    vid = undefined;
    forgetCookie();
  }
  // consent given: remembered where the dataset keeps a cookie anyway (not cookieless: it stores nothing)
  function consent() {
    if (!optedOut && mode !== "cookieless") setCookie(CONSENT, "1", CONSENT_MAX_AGE);
    start();
  }
  function command(name, value) {
    if (name === "consent") (value === true ? consent : stop)();
  }
  var queued = (w.leadIntel && w.leadIntel.q) || [];
  w.leadIntel = function () { command.apply(null, arguments); };
  for (var q = 0; q < queued.length; q++) command.apply(null, queued[q]);
  if (optedOut) forgetCookie();
  else if (!refused && (mode !== "required" || hasCookie(CONSENT))) start();

  if (!cfg.formTracking) return;

  // never a password, hidden or file field, nor one whose name says secret or card (cfg.secretNames:
  // the collector's rule, server/tracking/form-fields.ts), nor a value that is a card number
  var SECRET = new RegExp(cfg.secretNames);
  function words(name) {
    return " " + name.replace(/([a-z])([A-Z])/g, "$1 $2").normalize("NFD").replace(/[\u0300-\u036f]/g, "")
      .toLowerCase().replace(/[^a-z0-9]+/g, " ").trim() + " ";
  }
  function secretName(name) {
    var text = words(name);
    return SECRET.test(text) || SECRET.test(text.replace(/ /g, ""));
  }
  // a card number however decorated: server/tracking/form-fields.ts, looksLikeCardNumber (here on
  // Latin letters, where old browsers parse no \p{L}; the collector applies the full rule again)
  var L = "A-Za-z\u00C0-\u024F";
  var WORD = new RegExp("[" + L + "]{2,}"), LETTER = new RegExp("[" + L + "]", "g");
  var END_LETTER = new RegExp("^[^0-9" + L + "]*[" + L + "][0-9]|[0-9][" + L + "][^0-9" + L + "]*$");
  function luhn(digits) {
    for (var i = 0, sum = 0; i < digits.length; i++) {
      var n = Number(digits.charAt(digits.length - 1 - i));
      if (i % 2 === 1) n = n * 2 > 9 ? n * 2 - 9 : n * 2;
      sum += n;
    }
    return sum % 10 === 0;
  }
  function cardNumber(value) {
    return value.normalize("NFKC").split(WORD).some(function (stretch) {
      var digits = stretch.replace(/\D/g, ""), letters = (stretch.match(LETTER) || []).length;
      if (digits.length >= 13 && digits.length <= 19 && luhn(digits)) return true;
      return letters === 1 && END_LETTER.test(stretch) && digits.length >= 12 && digits.length <= 18;
    });
  }
  function keyOf(el) {
    return (cfg.formInputAttribute && el.getAttribute(cfg.formInputAttribute)) || el.name || "";
  }
  function keep(el) {
    var type = (el.type || "").toLowerCase();
    var auto = (el.getAttribute("autocomplete") || "").toLowerCase();
    if (!keyOf(el)) return false;
    if (["password", "hidden", "file", "submit", "button", "reset", "image"].indexOf(type) >= 0) return false;
    if (auto.indexOf("cc-") === 0 || secretName(keyOf(el)) || secretName(el.name || "")) return false;
    if ((type === "checkbox" || type === "radio") && !el.checked) return false;
    return true;
  }
  function fieldsOf(form) {
    var out = {}, n = 0;
    for (var i = 0; i < form.elements.length && n < 50; i++) {
      var el = form.elements[i];
      if (!keep(el)) continue;
      var value = String(el.value || "").slice(0, 1000);
      if (!value || cardNumber(value)) continue;
      out[keyOf(el).slice(0, 128)] = value;
      n++;
    }
    return out;
  }

  // Forms filled in and not sent. They are delivered when the visitor leaves the page in any way:
  // a link or another form (sent at once, while the page is alive), history navigation (also a
  // single-page app's), hiding the tab, or leaving it (address bar, script, reload, back/forward
  // into the page cache, closing the tab: visibilitychange to hidden and pagehide, whichever comes
  // first; sendBeacon outlives the page). Each state of a form is sent once; a form once
  // submitted is not sent as partial (unless it is filled in again).
  var touched = [], sentState = [];
  function flushPartial() {
    if (!cfg.partialFormTracking) return;
    var events = [];
    touched.forEach(function (form, i) {
      var fields = fieldsOf(form), state = JSON.stringify(fields);
      if (state === "{}" || state === sentState[i]) return;
      sentState[i] = state;
      events.push({ type: "form", partial: true, visitorId: vid, url: location.href.slice(0, 2048), fields: fields });
    });
    if (events.length) send(events);
  }
  function forget(form) {
    var i = touched.indexOf(form);
    if (i >= 0) { touched.splice(i, 1); sentState.splice(i, 1); }
  }

  // a page that checks a form on its submit event and then calls form.submit() submits it once
  var submittedState = typeof WeakMap === "function" ? new WeakMap() : undefined;
  function submitted(form) {
    forget(form);
    flushPartial(); // the other forms on the page are being left
    var fields = fieldsOf(form), state = JSON.stringify(fields);
    if (submittedState && submittedState.get(form) === state) return;
    if (submittedState) submittedState.set(form, state);
    send([{ type: "form", visitorId: vid, url: location.href.slice(0, 2048), fields: fields }]);
  }
  d.addEventListener("submit", function (e) { submitted(e.target); }, true);
  // form.submit() from the page's own script fires no submit event: a submission all the same
  var formProto = w.HTMLFormElement && w.HTMLFormElement.prototype;
  var nativeSubmit = formProto && formProto.submit;
  if (typeof nativeSubmit === "function") {
    formProto.submit = function () {
      submitted(this);
      return nativeSubmit.apply(this, arguments);
    };
  }

  if (!cfg.partialFormTracking) return;
  // typing (input), and values set by pickers, autofill or selects (change)
  function touch(e) {
    var form = e.target && e.target.form;
    if (form && touched.indexOf(form) < 0) { touched.push(form); sentState.push(""); }
  }
  d.addEventListener("input", touch, true);
  d.addEventListener("change", touch, true);
  d.addEventListener("click", function (e) {
    var link = e.target && e.target.closest && e.target.closest("a[href]");
    if (link && !/^(#|javascript:)/i.test(link.getAttribute("href") || "")) flushPartial();
  }, true);
  d.addEventListener("visibilitychange", function () {
    if (d.visibilityState === "hidden") flushPartial();
  });
  w.addEventListener("pagehide", flushPartial);
  w.addEventListener("popstate", flushPartial);
  ["pushState", "replaceState"].forEach(function (name) {
    var original = w.history && w.history[name];
    if (typeof original !== "function") return;
    w.history[name] = function () {
      flushPartial();
      return original.apply(this, arguments);
    };
  });
})(window, document, __SETTINGS__);
