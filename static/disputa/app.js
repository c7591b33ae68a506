// Disputa page behaviour. No inline scripts anywhere: the CSP allows only files from this origin.
(function () {
  "use strict";
  function setConnection(state, text) {
    var badge = document.getElementById("connection");
    if (!badge) return;
    badge.dataset.state = state;
    badge.textContent = text;
  }
  // The badge tells about the run's socket; the nav's "Needs you" socket (on every page) is not the run's.
  function runSocket(event) { return !(event.target && event.target.id === "needs-you-link"); }
  document.addEventListener("htmx:wsOpen", function (event) { if (runSocket(event)) setConnection("live", "live"); });
  // The consumer refuses a socket before accepting it (4401, 4404, 4429: too many connects from this address), and
  // Daphne answers such a refusal with HTTP 403 on the handshake, so the browser only ever sees 1006 and cannot
  // tell them apart. The ws extension retries 1006 with full-jitter backoff (a random wait up to 1, 2, 4 … 64 s,
  // reset only by a successful open), so a crowded address is not hammered.
  document.addEventListener("htmx:wsClose", function (event) {
    if (runSocket(event)) setConnection("closed", "reconnecting…");
  });
  document.addEventListener("htmx:wsError", function (event) {
    if (runSocket(event)) setConnection("closed", "connection error, retrying…");
  });
  // "Needs you": the tab title says how many items wait ("(2) Run 5 · Disputa"), and, once the user has asked
  // for it by a click (never on load), a browser notification when the count grows while the tab is hidden.
  var baseTitle = document.title.replace(/^\(\d+\) /, "");
  var lastCount = null;
  function needsYou() {
    var badge = document.getElementById("needs-you-count");
    if (!badge) return;
    var count = parseInt(badge.dataset.count || "0", 10) || 0;
    document.title = count ? "(" + count + ") " + baseTitle : baseTitle;
    if (lastCount !== null && count > lastCount && document.hidden && window.Notification &&
        Notification.permission === "granted") {
      new Notification("Disputa: " + count + " item" + (count === 1 ? "" : "s") + " need" + (count === 1 ? "s" : "") + " you");
    }
    lastCount = count;
  }
  document.addEventListener("DOMContentLoaded", needsYou);
  document.addEventListener("htmx:oobAfterSwap", needsYou);
  document.addEventListener("htmx:wsAfterMessage", needsYou);
  document.addEventListener("DOMContentLoaded", function () {
    var button = document.getElementById("notify-enable");
    if (!button || !window.Notification || Notification.permission !== "default") return;
    button.hidden = false;
    button.addEventListener("click", function () {
      Notification.requestPermission().then(function () { button.hidden = true; });
    });
  });
  // After a human action (a POST answered in place), its confirmation takes the focus: the button that had it was
  // replaced. The first confirmation or error of the swapped part, else the part itself.
  document.addEventListener("htmx:afterSettle", function (event) {
    var config = event.detail.requestConfig;
    if (!config || config.verb !== "post") return;
    var part = event.detail.elt && event.detail.elt.isConnected ? event.detail.elt : null;
    var target = config.target && config.target.id ? document.getElementById(config.target.id) : null;
    var scope = target || part || document;
    var confirmation = document.getElementById("action-confirmation");
    var done = scope.querySelector ? scope.querySelector("[role=status], [role=alert], .needs-done") : null;
    if (!done && confirmation && !confirmation.hidden && target && target.id === "moderator") done = confirmation;
    if (!done && scope.classList && scope.classList.contains("needs-done")) done = scope;
    if (!done) return;
    if (!done.hasAttribute("tabindex")) done.setAttribute("tabindex", "-1");
    done.focus();
  });
  // Screen readers hear the run's status once per change, from a live region that no frame replaces
  // (#run-announcer): the status card itself is swapped by every frame, and streaming turn text is in no live region.
  var announcedStatus = null;
  function runStatus() {
    var card = document.getElementById("run-status");
    if (!card) return null;
    var label = document.getElementById("run-status-label");
    var reason = card.querySelector(".reason");
    var text = "Run status: " + (label ? label.textContent.trim() : card.dataset.status);
    if (reason && reason.textContent.trim()) text += ". " + reason.textContent.trim();
    return { status: card.dataset.status, text: text };
  }
  function announceStatusChange() {
    var current = runStatus();
    var region = document.getElementById("run-announcer");
    if (!current || !region || current.status === announcedStatus) return;
    if (announcedStatus !== null) region.textContent = current.text;
    announcedStatus = current.status;
  }
  document.addEventListener("DOMContentLoaded", announceStatusChange);
  document.addEventListener("htmx:wsAfterMessage", announceStatusChange);
  // And once when live updates stop coming through (the server's channel layer is down) and once when they are back:
  // the notice itself is swapped by frames, like the status card.
  var announcedInterrupted = false;
  function announceLiveState() {
    var notice = document.getElementById("live-notice");
    var region = document.getElementById("run-announcer");
    if (!notice || !region || notice.hidden !== announcedInterrupted) return;
    announcedInterrupted = !notice.hidden;
    region.textContent = announcedInterrupted ? "Live updates interrupted, catching up." : "Live updates are back.";
  }
  document.addEventListener("htmx:wsAfterMessage", announceLiveState);
  // The new-run form offers only the chosen backend's models (app.css shows the chosen protocol's and backend's
  // fields; a list cannot hide its options with CSS alone): other backends' groups are hidden, and a model of
  // another backend gives way to the chosen backend's first.
  function modelsOfBackend(form) {
    var chosen = form.querySelector("input[name=backend]:checked");
    var select = form.querySelector("select[name=model]");
    if (!chosen || !select) return;
    var groups = select.querySelectorAll("optgroup[data-backend]");
    for (var i = 0; i < groups.length; i++) groups[i].hidden = groups[i].dataset.backend !== chosen.value;
    var selected = select.options[select.selectedIndex];
    if (!selected || selected.parentElement.hidden) {
      var first = select.querySelector("optgroup[data-backend='" + chosen.value + "'] option");
      if (first) select.value = first.value;
    }
  }
  document.addEventListener("DOMContentLoaded", function () {
    var form = document.getElementById("run-form");
    if (!form) return;
    modelsOfBackend(form);
    form.addEventListener("change", function (event) {
      if (event.target && event.target.name === "backend") modelsOfBackend(form);
    });
  });
  // A link to a turn a long transcript left out (#turn-…): load the left-out parts, then go to the turn.
  function revealLinkedTurn() {
    var id = decodeURIComponent(window.location.hash.slice(1));
    if (id.indexOf("turn-") !== 0 || document.getElementById(id)) { return; }
    var parts = document.querySelectorAll(".turns-deferred");
    if (!parts.length || !window.htmx) { return; }
    function land() {
      var turn = document.getElementById(id);
      if (!turn) { return; }
      document.removeEventListener("htmx:afterSettle", land);
      turn.scrollIntoView();
    }
    document.addEventListener("htmx:afterSettle", land);
    parts.forEach(function (part) { htmx.trigger(part, "click"); });
  }
  document.addEventListener("DOMContentLoaded", revealLinkedTurn);
  window.addEventListener("hashchange", revealLinkedTurn);
  // Tell the user when a POST fails instead of silently doing nothing.
  document.addEventListener("htmx:responseError", function (event) {
    var status = event.detail.xhr.status;
    var text = status === 403 ? "You are not allowed to do that (moderate permission needed)."
      : "The server answered " + status + ". Reload the page and try again.";
    var box = document.getElementById("moderator");
    if (box) {
      var p = document.createElement("p");
      p.className = "error";
      p.setAttribute("role", "alert");
      p.textContent = text;
      box.prepend(p);
    }
  });
})();
