/* One confirmation rule (issue 13 item 9), included in the inline script of templates/base.html:
   no confirm() dialogs; an approve or reject (button, key a, Ctrl/Cmd+Enter; on a candidate page
   or in bulk from the queue: every form[data-undo]) is held behind an
   Undo toast for data-undo-seconds. Undo (the button, u or Escape) cancels it: nothing is sent and
   the form is as it was. When the time is up the form is posted as without JavaScript (the server
   decides, a conflict shows its page). Moving on first (a link, a key that follows one, another
   form) sends it in the background and then goes there; closing or leaving the page sends it with
   sendBeacon. Background sends carry deferred=1: the server keeps the outcome (decided, conflict,
   refused) as a message for the next page. Only form values travel; no page text is read. */
(function () {
  "use strict";
  var toast = document.getElementById("undo-toast");
  if (!toast) { return; }
  var seconds = parseInt(toast.getAttribute("data-undo-seconds") || "10", 10);
  if (!(seconds > 0)) { return; }
  var body = toast.querySelector("[data-undo-body]");
  var text = toast.querySelector("[data-undo-text]");
  var left = toast.querySelector("[data-undo-left]");
  var undoButton = toast.querySelector("[data-undo-button]");
  var locks = Array.prototype.slice.call(document.querySelectorAll("[data-undo-lock]"));
  var pending = null;
  var sentAny = false;
  var fade = null;

  // While held, the page's actions and the held form's own fields are out of reach.
  function lock(p, on) {
    locks.concat(p.controls).forEach(function (el) { el.inert = on; });
  }
  function stopTimers(p) { window.clearTimeout(p.timer); window.clearInterval(p.ticker); }
  function tick() {
    if (!pending) { return; }
    left.textContent = Math.max(0, Math.ceil((pending.deadline - Date.now()) / 1000)) + " s";
  }
  function show(label, withUndo) {
    window.clearTimeout(fade);
    text.textContent = label;
    undoButton.hidden = !withUndo;
    if (!withUndo) { left.textContent = ""; }
    body.hidden = false;
  }

  function label(form, submitter) {
    var text = (submitter && submitter.getAttribute("data-undo")) || form.getAttribute("data-undo");
    var count = form.querySelector("[data-selected-count]");  // bulk: "Approved: 3 selected"
    return count ? text + ": " + count.textContent : text;
  }

  function hold(form, submitter) {
    var data = new FormData(form);
    if (submitter && submitter.name) { data.append(submitter.name, submitter.value); }
    var reason = form.querySelector("textarea");
    pending = {
      form: form,
      submitter: submitter && submitter.name ? submitter : null,
      controls: Array.prototype.slice.call(form.querySelectorAll("input, textarea, button, select")),
      data: data,
      reason: reason,
      reasonValue: reason ? reason.value : null,
      focus: submitter || (document.activeElement !== document.body ? document.activeElement : null),
      deadline: Date.now() + seconds * 1000,
      sent: false
    };
    lock(pending, true);
    show(label(form, submitter), true);
    tick();
    pending.ticker = window.setInterval(tick, 1000);
    pending.timer = window.setTimeout(expire, seconds * 1000);
  }

  function undo() {
    var p = pending;
    if (!p || p.sent) { return; }
    stopTimers(p);
    pending = null;
    lock(p, false);
    if (p.reason) { p.reason.value = p.reasonValue; }
    show("Undone: nothing was sent.", false);
    fade = window.setTimeout(function () { body.hidden = true; }, 5000);
    if (p.focus && document.contains(p.focus)) { p.focus.focus(); }
  }

  function postNow(p) {
    // The plain form post, as without JavaScript: the server's answer (the next candidate, the
    // conflict page, the form's errors) replaces the page.
    p.sent = true;
    sentAny = true;
    stopTimers(p);
    lock(p, false);
    if (p.reason) { p.reason.value = p.reasonValue; }
    show("Sending…", false);
    submitAs(p.form, p.submitter);
  }

  // submit() sends no submitter: carry its name and value (bulk: decision=approve) and, for a
  // button with its own formaction (the queue's claim button inside the bulk form), its URL.
  function submitAs(form, submitter) {
    if (submitter && submitter.name) {
      var carried = document.createElement("input");
      carried.type = "hidden";
      carried.name = submitter.name;
      carried.value = submitter.value;
      form.appendChild(carried);
    }
    if (submitter && submitter.hasAttribute("formaction")) { form.action = submitter.formAction; }
    HTMLFormElement.prototype.submit.call(form);
  }
  // A button with its own formaction posts elsewhere (a claim): it is not the form's decision.
  function elsewhere(event) { return !!(event.submitter && event.submitter.hasAttribute("formaction")); }
  function expire() { if (pending && !pending.sent) { postNow(pending); } }

  function background(p) {
    var data = p.data;
    data.set("deferred", "1");
    p.sent = true;
    sentAny = true;
    stopTimers(p);
    return data;
  }

  // Moving on: send first, then go. A 204 (decided), 409 (conflict) or 400 (refused) left a
  // message for the next page; anything else (a log-in redirect, a refused CSRF token) is
  // answered by posting the form itself, whose answer page explains.
  function sendThen(go) {
    var p = pending;
    var data = background(p);
    show("Sending…", false);
    window.fetch(p.form.action, {
      method: "POST", body: data, credentials: "same-origin", keepalive: true, redirect: "manual"
    }).then(function (response) {
      if (response.status === 204 || response.status === 409 || response.status === 400) { go(); }
      else { postNow(p); }
    }, function () { postNow(p); });
  }

  document.querySelectorAll("form[data-undo]").forEach(function (form) {
    form.addEventListener("submit", function (event) {
      if (elsewhere(event)) { return; }
      event.preventDefault();
      if (!pending) { hold(form, event.submitter); }
    });
  });
  undoButton.addEventListener("click", undo);

  // Capture phase, before the page's shortcut handler: u and Escape undo instead of their usual
  // meaning while a decision is held.
  window.addEventListener("keydown", function (event) {
    if (!pending || pending.sent || event.ctrlKey || event.metaKey || event.altKey) { return; }
    var target = event.target;
    var typing = target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
    if ((event.key === "u" && !typing) || event.key === "Escape") {
      event.preventDefault();
      event.stopImmediatePropagation();
      undo();
    }
  }, true);

  document.addEventListener("click", function (event) {
    if (!pending || event.defaultPrevented || event.button !== 0) { return; }
    var link = event.target.closest && event.target.closest("a[href]");
    if (!link || event.ctrlKey || event.metaKey || event.shiftKey || link.target === "_blank") { return; }
    event.preventDefault();
    if (pending.sent) { return; }
    var href = link.href;
    sendThen(function () { window.location.assign(href); });
  }, true);

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!pending || (form.hasAttribute("data-undo") && !elsewhere(event))) { return; }
    event.preventDefault();
    if (pending.sent) { return; }
    var submitter = event.submitter && event.submitter.hasAttribute("formaction") ? event.submitter : null;
    sendThen(function () { submitAs(form, submitter); });
  }, true);

  window.addEventListener("pagehide", function () {
    var p = pending;
    if (!p || p.sent) { return; }
    var data = background(p);
    if (!(navigator.sendBeacon && navigator.sendBeacon(p.form.action, data))) {
      window.fetch(p.form.action, { method: "POST", body: data, credentials: "same-origin", keepalive: true });
    }
  });
  // Back to a page kept in the browser's cache after its decision was sent: show the truth.
  window.addEventListener("pageshow", function (event) {
    if (event.persisted && sentAny) { window.location.reload(); }
  });
})();
