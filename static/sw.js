(() => {
  // web/sw.js
  var CACHE = `countersign-${"65888b2be8d1971d"}`;
  var SHELL = ["/offline.html", "/static/app.css", "/static/app.js", "/static/icons/icon-192.png", "/manifest.webmanifest"];
  self.addEventListener("install", (event) => {
    event.waitUntil(caches.open(CACHE).then((cache) => cache.addAll(SHELL)).then(() => self.skipWaiting()));
  });
  self.addEventListener("activate", (event) => {
    event.waitUntil(
      caches.keys().then((keys) => Promise.all(keys.filter((k) => k.startsWith("countersign-") && k !== CACHE).map((k) => caches.delete(k)))).then(() => self.clients.claim())
    );
  });
  self.addEventListener("fetch", (event) => {
    const req = event.request;
    if (req.method !== "GET") return;
    const url = new URL(req.url);
    if (url.origin !== self.location.origin) return;
    if (req.mode === "navigate") {
      event.respondWith(fetch(req).catch(() => caches.match("/offline.html")));
      return;
    }
    if (url.pathname.startsWith("/static/") || url.pathname === "/manifest.webmanifest") {
      event.respondWith(
        fetch(req).then((res) => {
          if (res.ok) {
            const copy = res.clone();
            caches.open(CACHE).then((cache) => cache.put(req, copy));
          }
          return res;
        }).catch(() => caches.match(req))
      );
    }
  });
})();
