// Mycorrhizal web client: progressive enhancement only. Every page works without this file.
"use strict";
(function () {
  // Confirm before a destructive form is sent (the form carries data-confirm="question").
  document.addEventListener("submit", function (event) {
    var form = event.target;
    var question = form.getAttribute && form.getAttribute("data-confirm");
    if (question && !window.confirm(question)) {
      event.preventDefault();
    }
  });

  // Search as you type: a filter form with data-live="<results id>" swaps in the results
  // fragment of the same URL (?fragment=1) a moment after the last keystroke.
  document.querySelectorAll("form[data-live]").forEach(function (form) {
    var target = document.getElementById(form.getAttribute("data-live"));
    if (!target || !window.fetch) return;
    var timer = null;
    var latest = 0;
    function refresh() {
      var params = new URLSearchParams(new FormData(form));
      var shown = params.toString();
      params.set("fragment", "1");
      var ticket = ++latest;
      fetch(form.action + "?" + params.toString(), { credentials: "same-origin", headers: { Accept: "text/html" } })
        .then(function (response) { return response.ok ? response.text() : null; })
        .then(function (html) {
          if (html === null || ticket !== latest) return;
          target.innerHTML = html;
          window.history.replaceState(null, "", form.action + (shown ? "?" + shown : ""));
        })
        .catch(function () { /* the plain form still works */ });
    }
    form.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(refresh, 200);
    });
    form.addEventListener("change", function () {
      clearTimeout(timer);
      refresh();
    });
  });

  // Repeated fields (emails, phones): a new empty row appears once the last one is filled.
  document.querySelectorAll("fieldset[data-repeat]").forEach(function (set) {
    set.addEventListener("input", function () {
      var inputs = set.querySelectorAll("input");
      var last = inputs[inputs.length - 1];
      if (!last || last.value === "") return;
      var label = set.querySelector("label").cloneNode(true);
      var copy = last.cloneNode();
      copy.value = "";
      copy.id = last.id.replace(/\d+$/, String(inputs.length));
      label.setAttribute("for", copy.id);
      label.textContent = label.textContent.replace(/\d+$/, String(inputs.length + 1));
      set.appendChild(label);
      set.appendChild(copy);
    });
  });
  // Web Push: where the browser can, show the subscribe button of the settings page. A click
  // asks for permission, registers the service worker (/sw.js), subscribes with the server's
  // VAPID key and registers the subscription; the page then reloads to list this browser.
  var push = document.getElementById("webpush");
  if (push && "serviceWorker" in navigator && "PushManager" in window && window.fetch) {
    var status = document.getElementById("webpush-status");
    var fail = function (key) {
      return function () { status.textContent = push.getAttribute(key); };
    };
    var b64 = function (text) {
      var raw = atob((text + "===".slice((text.length + 3) % 4)).replace(/-/g, "+").replace(/_/g, "/"));
      var out = new Uint8Array(raw.length);
      for (var i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
      return out;
    };
    push.hidden = false;
    document.getElementById("webpush-subscribe").addEventListener("click", function () {
      Notification.requestPermission().then(function (permission) {
        if (permission !== "granted") return fail("data-denied")();
        return Promise.all([
          navigator.serviceWorker.register(push.getAttribute("data-worker")).then(function () {
            return navigator.serviceWorker.ready;
          }),
          fetch(push.getAttribute("data-key-url"), { credentials: "same-origin" }).then(function (r) { return r.json(); })
        ]).then(function (both) {
          return both[0].pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: b64(both[1].public_key) });
        }).then(function (subscription) {
          return fetch(push.getAttribute("data-subscribe-url"), {
            method: "POST",
            credentials: "same-origin",
            headers: { "Content-Type": "application/json" },
            body: JSON.stringify(subscription.toJSON())
          });
        }).then(function (response) {
          if (!response.ok) return fail("data-failed")();
          window.location.reload();
        });
      }).catch(fail("data-failed"));
    });
  }
})();
