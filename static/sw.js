(() => {
  // <define:SHELL>
  var define_SHELL_default = ["/offline.html", "/static/app.2d8e315c7c10.css", "/static/app.263971e0dcdf.js", "/static/icons/icon-192.png", "/manifest.webmanifest"];

  // web/sw.js
  var CACHE = `countersign-${"cdc35e9cf252c47c"}`;
  self.addEventListener("install", (event) => {
    event.waitUntil(caches.open(CACHE).then((cache) => cache.addAll(define_SHELL_default)).then(() => self.skipWaiting()));
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
  var ICON = "/static/icons/icon-192.png";
  function safePath(url) {
    if (typeof url !== "string" || !url.startsWith("/") || url.startsWith("//") || url.startsWith("/\\")) return "/";
    return url;
  }
  function notificationFor(text) {
    let msg = null;
    try {
      msg = JSON.parse(text);
    } catch {
    }
    if (!msg || typeof msg !== "object") msg = {};
    const title = typeof msg.title === "string" && msg.title !== "" ? msg.title : "";
    const url = safePath(msg.url);
    switch (msg.event) {
      case "ask":
        return [title || "A new ask waits for you", {
          body: "Open to answer",
          tag: msg.approval_id || "countersign-ask",
          data: { url },
          renotify: true,
          requireInteraction: true,
          icon: ICON,
          badge: ICON
        }];
      case "decided":
        return [`Decided: ${String(msg.status || "closed").replaceAll("_", " ")}`, {
          body: title,
          tag: msg.approval_id || "countersign-ask",
          data: { url },
          icon: ICON,
          badge: ICON
        }];
      case "collapsed":
        return [title || "Asks wait for you", { body: "Open Countersign to answer them", tag: "countersign-waiting", data: { url: "/" }, renotify: true, icon: ICON, badge: ICON }];
      case "passkey_added":
        return [title || "A new passkey was added to your account", {
          body: "Not you? Open Devices and remove it.",
          data: { url: "/devices" },
          renotify: true,
          requireInteraction: true,
          icon: ICON,
          badge: ICON
        }];
      case "passkey_removed":
        return [title || "A passkey was removed from your account", {
          body: "Open Devices to see your passkeys.",
          data: { url: "/devices" },
          renotify: true,
          icon: ICON,
          badge: ICON
        }];
      case "test":
        return [title || "Countersign test", { body: "Notifications work on this device.", tag: "countersign-test", data: { url }, icon: ICON, badge: ICON }];
    }
    return ["Countersign", { body: "Something changed: open Countersign.", tag: "countersign", data: { url: "/" }, icon: ICON, badge: ICON }];
  }
  self.addEventListener("push", (event) => {
    let text = "";
    try {
      text = event.data ? event.data.text() : "";
    } catch {
    }
    const [title, options] = notificationFor(text);
    event.waitUntil(self.registration.showNotification(title, options));
  });
  self.addEventListener("notificationclick", (event) => {
    event.notification.close();
    const path = safePath(event.notification.data?.url);
    event.waitUntil(openPath(path));
  });
  async function openPath(path) {
    const target = new URL(path, self.location.origin);
    const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
    const ours = windows.filter((w) => {
      try {
        return new URL(w.url).origin === target.origin;
      } catch {
        return false;
      }
    });
    const there = ours.find((w) => {
      const u = new URL(w.url);
      return u.pathname + u.search === target.pathname + target.search;
    });
    if (there) return there.focus();
    for (const w of ours) {
      try {
        const focused = await w.focus();
        const moved = await (focused ?? w).navigate(path);
        if (moved) return moved;
      } catch {
      }
    }
    return self.clients.openWindow(path);
  }
  self.addEventListener("pushsubscriptionchange", (event) => {
    event.waitUntil(renewSubscription(event.oldSubscription));
  });
  async function renewSubscription(old) {
    if (!old) return;
    const sub = await self.registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: old.options.applicationServerKey });
    const res = await fetch("/push/renew", {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify({ old_endpoint: old.endpoint, old_auth: old.toJSON().keys?.auth ?? "", subscription: sub.toJSON() })
    });
    if (!res.ok) throw new Error(`renew push subscription: the server answered ${res.status}`);
  }
})();
