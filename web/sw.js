// Countersign's service worker: an offline shell for the installed app.
// VERSION is the content hash of the built assets, set at build time, so a
// new build replaces the old cache. SHELL, also set at build time, is what
// the offline page needs, the script and the style sheet under their hashed
// names (/static/app.<hash>.css, as the pages and the offline page ask for them).
/* global VERSION, SHELL */
const CACHE = `countersign-${VERSION}`;

self.addEventListener("install", (event) => {
  event.waitUntil(caches.open(CACHE).then((cache) => cache.addAll(SHELL)).then(() => self.skipWaiting()));
});

self.addEventListener("activate", (event) => {
  event.waitUntil(
    caches
      .keys()
      .then((keys) => Promise.all(keys.filter((k) => k.startsWith("countersign-") && k !== CACHE).map((k) => caches.delete(k))))
      .then(() => self.clients.claim()),
  );
});

self.addEventListener("fetch", (event) => {
  const req = event.request;
  if (req.method !== "GET") return;
  const url = new URL(req.url);
  if (url.origin !== self.location.origin) return;
  if (req.mode === "navigate") {
    // Pages are always fresh (asks change); offline, the shell says so.
    event.respondWith(fetch(req).catch(() => caches.match("/offline.html")));
    return;
  }
  if (url.pathname.startsWith("/static/") || url.pathname === "/manifest.webmanifest") {
    event.respondWith(
      fetch(req)
        .then((res) => {
          if (res.ok) {
            const copy = res.clone();
            caches.open(CACHE).then((cache) => cache.put(req, copy));
          }
          return res;
        })
        .catch(() => caches.match(req)),
    );
  }
});

// Web Push. Every push shows a notification, inside waitUntil: browsers
// revoke push from a site whose pushes show none. A push carries the JSON
// of models.PushMessage: {event, approval_id, title, status, url, waiting}.

const ICON = "/static/icons/icon-192.png";

// safePath keeps a notification's link on this site: only a plain absolute
// path is followed, anything else (another origin, //host, javascript:)
// opens the inbox.
function safePath(url) {
  if (typeof url !== "string" || !url.startsWith("/") || url.startsWith("//") || url.startsWith("/\\")) return "/";
  return url;
}

/** The title and options of the notification a push shows. */
function notificationFor(text) {
  let msg = null;
  try {
    msg = JSON.parse(text);
  } catch {
    /* shown as a generic notification below */
  }
  if (!msg || typeof msg !== "object") msg = {};
  const title = typeof msg.title === "string" && msg.title !== "" ? msg.title : "";
  const url = safePath(msg.url);
  switch (msg.event) {
    case "ask":
      return [title || "A new ask waits for you", {
        body: "Open to answer", tag: msg.approval_id || "countersign-ask", data: { url },
        renotify: true, requireInteraction: true, icon: ICON, badge: ICON,
      }];
    case "decided":
      return [`Decided: ${String(msg.status || "closed").replaceAll("_", " ")}`, {
        body: title, tag: msg.approval_id || "countersign-ask", data: { url }, icon: ICON, badge: ICON,
      }];
    case "collapsed":
      return [title || "Asks wait for you", { body: "Open Countersign to answer them", tag: "countersign-waiting", data: { url: "/" }, renotify: true, icon: ICON, badge: ICON }];
    case "passkey_added":
      // A security notice: it stays until seen, and always opens the
      // Devices page, where an unknown passkey can be removed.
      return [title || "A new passkey was added to your account", {
        body: "Not you? Open Devices and remove it.", data: { url: "/devices" },
        renotify: true, requireInteraction: true, icon: ICON, badge: ICON,
      }];
    case "passkey_removed":
      return [title || "A passkey was removed from your account", {
        body: "Open Devices to see your passkeys.", data: { url: "/devices" }, renotify: true, icon: ICON, badge: ICON,
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
    /* an undecodable body still shows the generic notification */
  }
  const [title, options] = notificationFor(text);
  event.waitUntil(self.registration.showNotification(title, options));
});

// A click opens the ask: a window already on it, else any window of the
// app sent there, else a new window.
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
      /* an uncontrolled window cannot be navigated: try the next, then a new one */
    }
  }
  return self.clients.openWindow(path);
}

// The browser rotated the subscription: subscribe again with the same key
// and tell the server, proving it with the old endpoint and auth secret
// (the service worker has no session).
self.addEventListener("pushsubscriptionchange", (event) => {
  event.waitUntil(renewSubscription(event.oldSubscription));
});

async function renewSubscription(old) {
  if (!old) return; // nothing proves which row to update: the devices page subscribes again
  const sub = await self.registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: old.options.applicationServerKey });
  const res = await fetch("/push/renew", {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json" },
    body: JSON.stringify({ old_endpoint: old.endpoint, old_auth: old.toJSON().keys?.auth ?? "", subscription: sub.toJSON() }),
  });
  if (!res.ok) throw new Error(`renew push subscription: the server answered ${res.status}`);
}
