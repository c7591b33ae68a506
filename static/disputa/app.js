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
