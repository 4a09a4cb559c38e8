/* Review Inbox helpers, included in the one inline script of templates/base.html (no dependencies): drafts kept in the browser until the server
   confirms them, Ctrl/Cmd+Enter submits, canned reject reasons (keys 1-9), bulk selection in the
   queue (checkboxes, x, shift-click, "select all N matching"). Text only ever moves between form
   fields and localStorage as values, never as HTML. */
(function () {
  "use strict";
  var PREFIX = "powercontext:draft:";

  function store(key, value) {
    try {
      if (value === null) { window.localStorage.removeItem(PREFIX + key); }
      else { window.localStorage.setItem(PREFIX + key, value); }
    } catch (e) { /* storage full or disabled: the form still works */ }
  }
  function load(key) {
    try { return window.localStorage.getItem(PREFIX + key); } catch (e) { return null; }
  }
  function typing(el) {
    // Check boxes keep the shortcuts (a click on a row's box focuses it).
    if (el && el.tagName === "INPUT" && /^(checkbox|radio|button|submit)$/.test(el.type)) { return false; }
    return el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));
  }
  // Single-key shortcuts (1-9, x) obey the footer's switch (see templates/base.html).
  function shortcutsOn() { return !window.PowerContextShortcuts || window.PowerContextShortcuts.on(); }
  function changed(el) { el.dispatchEvent(new Event("input", { bubbles: true })); }

  // A success message names the drafts it settled (data-done="reject:12"): forget them.
  document.querySelectorAll("[data-done]").forEach(function (msg) {
    msg.getAttribute("data-done").split(/\s+/).forEach(function (key) { if (key) { store(key, null); } });
  });

  // Single fields (reject reasons): restore into an empty field, save on every change.
  document.querySelectorAll("textarea[data-draft]").forEach(function (field) {
    var key = field.getAttribute("data-draft");
    var saved = load(key);
    if (saved && !field.value) { field.value = saved; field.setAttribute("data-restored", ""); }
    field.addEventListener("input", function () { store(key, field.value || null); });
  });

  // Whole forms (revise): restore a draft made against the same version, unless the page shows
  // the server's errors for a posted form (those fields already hold the posted text).
  document.querySelectorAll("form[data-draft-form]").forEach(function (form) {
    var key = form.getAttribute("data-draft-form");
    var version = form.getAttribute("data-draft-version") || "";
    var fields = form.querySelectorAll("textarea, input[type=text]");
    var saved = null;
    try { saved = JSON.parse(load(key) || "null"); } catch (e) { saved = null; }
    if (saved && saved.v === version && saved.fields && !form.querySelector(".errorlist")) {
      fields.forEach(function (f) {
        if (Object.prototype.hasOwnProperty.call(saved.fields, f.name)) { f.value = saved.fields[f.name]; }
      });
      var note = document.getElementById("draft-note");
      if (note) { note.hidden = false; }
    }
    form.addEventListener("input", function () {
      var values = {};
      fields.forEach(function (f) { values[f.name] = f.value; });
      store(key, JSON.stringify({ v: version, fields: values }));
    });
    var discard = document.getElementById("draft-discard");
    if (discard) {
      discard.addEventListener("click", function () { store(key, null); window.location.reload(); });
    }
  });

  // Ctrl/Cmd+Enter submits the form the focus is in (through its default action when it has one).
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Enter" || !(event.ctrlKey || event.metaKey)) { return; }
    var form = event.target && event.target.form;
    if (!form) { return; }
    event.preventDefault();
    var submitter = form.querySelector("[data-default-submit]");
    if (submitter) { form.requestSubmit(submitter); } else { form.requestSubmit(); }
  });

  // Canned reasons: a click on a chip, or keys 1-9 outside text fields, inserts one.
  var target = document.querySelector("[data-canned-target]");
  function insert(chip) {
    if (!target || !chip) { return; }
    var text = chip.getAttribute("data-text");
    target.value = target.value.trim() ? target.value.replace(/\s+$/, "") + "\n" + text : text;
    changed(target);
    target.focus();
  }
  document.querySelectorAll("[data-canned]").forEach(function (chip) {
    chip.addEventListener("click", function () { insert(chip); });
  });
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target) || !shortcutsOn()) { return; }
    if (!/^[1-9]$/.test(event.key)) { return; }
    var chip = document.querySelector('[data-canned="' + event.key + '"]');
    if (chip) { event.preventDefault(); insert(chip); }
  });

  // Sharing a queue (review/views/sharing.py): the open candidate page renews its "viewing"
  // marker with a bodiless, CSRF-checked POST while it is visible; a hidden tab lets it expire.
  var csrf = document.querySelector("input[name=csrfmiddlewaretoken]");
  var viewingNote = document.querySelector("[data-viewing-url]");
  if (viewingNote && csrf && window.fetch) {
    var viewingUrl = viewingNote.getAttribute("data-viewing-url");
    var every = Math.max(5, Number(viewingNote.getAttribute("data-viewing-seconds")) / 3) * 1000;
    var renew = function () {
      if (document.visibilityState !== "visible") { return; }
      fetch(viewingUrl, { method: "POST", credentials: "same-origin", headers: { "X-CSRFToken": csrf.value } })
        .then(function (response) {
          if (response.status !== 409) { return; }
          return response.json().then(function (data) {
            var text = (data && data.viewer ? data.viewer : "Another reviewer") + " is reviewing this now. You can still decide it.";
            if (viewingNote.textContent !== text) { viewingNote.textContent = text; }
          });
        })
        .catch(function () { /* offline: the marker expires on its own */ });
    };
    window.setInterval(renew, every);
    document.addEventListener("visibilitychange", renew);
  }

  // A queue row's claim button: posted in the background, so the bulk selection and the
  // scroll position stay as they are; the row's cell then says "you". Anything but a JSON
  // answer (a log-in page, an error page) falls back to the ordinary form post.
  function say(text, ok) {
    var note = document.querySelector("[data-claim-status]");
    if (!note) {
      note = document.createElement("p");
      note.setAttribute("role", "status");
      note.setAttribute("data-claim-status", "");
      // Fixed at the bottom of the window: in view wherever the reviewer scrolled, and moving no row.
      note.style.position = "fixed";
      note.style.left = "1rem";
      note.style.bottom = "1rem";
      note.style.zIndex = "20";
      note.style.maxWidth = "min(32rem, calc(100vw - 2rem))";
      document.body.appendChild(note);
    }
    note.className = "msg " + (ok ? "success" : "warning");
    note.textContent = text;
  }
  document.querySelectorAll("td[data-claimant] button[formaction]").forEach(function (button) {
    button.addEventListener("click", function (event) {
      if (!window.fetch || !csrf || button.hasAttribute("data-native")) { return; }
      event.preventDefault();
      var body = new FormData();
      body.append("csrfmiddlewaretoken", csrf.value);
      body.append(button.name, button.value);
      body.append("async", "1");
      button.disabled = true;
      fetch(button.getAttribute("formaction"), { method: "POST", body: body, credentials: "same-origin" })
        .then(function (response) {
          return response.json().then(function (data) { return { ok: response.ok, data: data }; });
        })
        .then(function (answer) {
          say(String(answer.data.message || ""), answer.ok);
          if (!answer.ok) { button.disabled = false; return; }
          var mine = document.createElement("b");
          mine.textContent = "you";
          button.closest("td").replaceChildren(mine);
        })
        .catch(function () {
          button.disabled = false;
          button.setAttribute("data-native", "");
          button.click();
        });
    });
  });

  // Bulk selection in the queue.
  var bulk = document.getElementById("bulk-form");
  if (!bulk) { return; }
  var boxes = Array.prototype.slice.call(bulk.querySelectorAll("input[data-select]"));
  var pageBox = bulk.querySelector("[data-select-page]");
  var allMatching = bulk.querySelector("[data-all-matching]");
  var allButton = bulk.querySelector("[data-select-all]");
  var count = bulk.querySelector("[data-selected-count]");
  var buttons = bulk.querySelectorAll("[data-bulk-action]");
  var last = -1;

  function refresh() {
    var n = boxes.filter(function (b) { return b.checked; }).length;
    var all = allMatching.value === "1";
    count.textContent = all ? allButton.getAttribute("data-all-label") + " selected" : n + " selected";
    buttons.forEach(function (b) { b.disabled = !all && n === 0; });
    boxes.forEach(function (b) { b.closest("tr").classList.toggle("picked", b.checked); });
    if (pageBox) { pageBox.checked = n === boxes.length && n > 0; }
    allButton.setAttribute("aria-pressed", all ? "true" : "false");
  }
  function set(box, on) { box.checked = on; if (!on) { allMatching.value = ""; } }
  boxes.forEach(function (box, i) {
    box.addEventListener("click", function (event) {
      if (event.shiftKey && last >= 0) {
        var lo = Math.min(last, i), hi = Math.max(last, i);
        for (var j = lo; j <= hi; j++) { set(boxes[j], box.checked); }
      } else {
        set(box, box.checked);
      }
      last = i;
      refresh();
    });
  });
  if (pageBox) {
    pageBox.addEventListener("change", function () {
      boxes.forEach(function (b) { set(b, pageBox.checked); });
      refresh();
    });
  }
  allButton.addEventListener("click", function () {
    var on = allMatching.value !== "1";
    allMatching.value = on ? "1" : "";
    boxes.forEach(function (b) { b.checked = on; });
    refresh();
  });
  // "Select flagged": the rows flagged as a later near-duplicate copy (_select_flagged.html).
  var flaggedButton = bulk.querySelector("[data-select-flagged]");
  var flagged = boxes.filter(function (b) { return b.closest("tr").querySelector('[data-flag="near-duplicate"]'); });
  if (flaggedButton) {
    flaggedButton.disabled = !flagged.length;
    flaggedButton.addEventListener("click", function () {
      flagged.forEach(function (b) { if (!b.checked) { b.click(); } });
    });
  }
  document.addEventListener("keydown", function (event) {
    if (event.key !== "x" || event.ctrlKey || event.metaKey || event.altKey || typing(event.target) || !shortcutsOn()) { return; }
    var row = document.querySelector("tr[data-queue-row].selected");
    var box = row && row.querySelector("input[data-select]");
    if (!box) { return; }
    event.preventDefault();
    set(box, !box.checked);
    last = boxes.indexOf(box);
    refresh();
  });
  refresh();
})();
