// Mycorrhizal's service worker: shows a Web Push notification ({"title", "body"} as JSON, sent
// encrypted by the server) and opens the app when it is clicked. It caches nothing.
"use strict";
self.addEventListener("push", function (event) {
  var data = {};
  if (event.data) {
    try {
      data = event.data.json();
    } catch (e) {
      data = { body: event.data.text() };
    }
  }
  event.waitUntil(
    self.registration.showNotification(data.title || "Mycorrhizal", { body: data.body || "" })
  );
});

self.addEventListener("notificationclick", function (event) {
  event.notification.close();
  event.waitUntil(self.clients.openWindow("/"));
});
