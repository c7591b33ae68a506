// Disputa page behaviour. No inline scripts anywhere: the CSP allows only files from this origin.
(function () {
  "use strict";
  function setConnection(state, text) {
    var badge = document.getElementById("connection");
    if (!badge) return;
    badge.dataset.state = state;
    badge.textContent = text;
  }
  document.addEventListener("htmx:wsOpen", function () { setConnection("live", "live"); });
  // The consumer refuses a socket before accepting it (4401, 4404, 4429: too many connects from this address), and
  // Daphne answers such a refusal with HTTP 403 on the handshake, so the browser only ever sees 1006 and cannot
  // tell them apart. The ws extension retries 1006 with full-jitter backoff (a random wait up to 1, 2, 4 … 64 s,
  // reset only by a successful open), so a crowded address is not hammered.
  document.addEventListener("htmx:wsClose", function () { setConnection("closed", "reconnecting…"); });
  document.addEventListener("htmx:wsError", function () { setConnection("closed", "connection error, retrying…"); });
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
