/* One Undo model (issue 22), included in the inline script of templates/base.html. A decision
   (approve, reject, bulk, a duplicate rejection, by button or key) is an ordinary form post that
   commits at once: nothing here holds or delays it. The page the reviewer lands on shows the
   server's Undo toast (review/_undo_toast.html), a form that POSTs the Undo; this script only
   gives it keys and keeps a sent decision from being overtaken:
   - u (a single-key shortcut, obeying the footer's switch) and Esc, outside text fields, press
     Undo while the toast is shown; "×" dismisses it, and the keys have their usual meaning again.
   - Once a form is sent, the page is on its way out: further keys, link clicks and forms are
     ignored until the answer arrives, so "a then n" or "a then e" never cancels the decision's
     post; the page that follows (the next candidate) takes the keys.
   Only form values travel; no page text is read. */
(function () {
  "use strict";
  var toast = document.getElementById("undo-toast");
  var form = toast && toast.querySelector("[data-undo-form]");
  var leaving = false;

  function typing(el) {
    return el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));
  }
  function offered() { return !!form && !toast.hidden; }

  if (toast) {
    var dismiss = toast.querySelector("[data-undo-dismiss]");
    if (dismiss) { dismiss.addEventListener("click", function () { toast.hidden = true; }); }
  }

  // Capture phase, before the page's shortcut handler.
  window.addEventListener("keydown", function (event) {
    if (leaving) {
      event.preventDefault();
      event.stopImmediatePropagation();
      return;
    }
    if (!offered() || event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) { return; }
    // One meaning per key: z undoes (as in mail clients), u is always "back to the queue", Esc
    // always closes (here: the offer, which stays available on the decided candidate's page).
    if (event.key === "z" && window.PowerContextShortcuts.on()) {
      event.preventDefault();
      event.stopImmediatePropagation();
      form.requestSubmit();
    } else if (event.key === "Escape") {
      toast.hidden = true;
    }
  }, true);

  // A form that really goes (no handler stopped it): from now on the page only waits.
  window.addEventListener("submit", function (event) {
    if (!event.defaultPrevented) { leaving = true; }
  });
  window.addEventListener("submit", function (event) {
    if (leaving) { event.preventDefault(); event.stopImmediatePropagation(); }
  }, true);
  document.addEventListener("click", function (event) {
    if (!leaving) { return; }
    var target = event.target;
    if (target && target.closest && target.closest("a[href], button, input, select, textarea")) {
      event.preventDefault();
      event.stopImmediatePropagation();
    }
  }, true);

  // Back to a page kept in the browser's cache after a decision was sent: show the truth.
  window.addEventListener("pageshow", function (event) {
    if (event.persisted && leaving) { window.location.reload(); }
  });
})();
