// Tests the built service worker (static/sw.js) in a vm context with stubbed
// self, registration and clients: what each push shows, where a click on a
// notification goes, and the renewal of a rotated subscription. No browser
// automation can click a system notification, so notificationclick is
// tested here. Run: node --test web/test/sw.test.mjs (static/sw_test.go
// runs it under go test).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import vm from "node:vm";

const ORIGIN = "https://countersign.example";
const source = readFileSync(new URL("../../static/sw.js", import.meta.url), "utf8");

// plain copies a value made in the worker's realm into this one, so that
// deepEqual does not trip over the other realm's Object prototype.
const plain = (v) => (v === undefined ? v : JSON.parse(JSON.stringify(v)));

/** A window of a browser, as clients.matchAll reports it. */
function windowAt(url, { controlled = true } = {}) {
  const w = {
    url,
    type: "window",
    focusCalls: 0,
    navigations: [],
    async focus() {
      w.focusCalls++;
      return w;
    },
    async navigate(to) {
      if (!controlled) throw new TypeError("This service worker is not the client's active service worker.");
      w.navigations.push(to);
      w.url = new URL(to, ORIGIN).href;
      return w;
    },
  };
  return w;
}

/** Loads static/sw.js into a fresh worker global with stubs, and returns them. */
function loadWorker({ windows = [] } = {}) {
  const listeners = {};
  const world = {
    listeners,
    shown: [], // {title, options, settled}
    opened: [],
    matchAllCalls: [],
    subscribeCalls: [],
    fetches: [],
    windows,
  };
  const registration = {
    showNotification(title, options) {
      const entry = { title, options, settled: false };
      world.shown.push(entry);
      // Settles a little later, so a handler that does not hand the promise
      // to waitUntil is caught: its waitUntil would resolve first.
      return new Promise((resolve) => setTimeout(() => {
        entry.settled = true;
        resolve();
      }, 5));
    },
    pushManager: {
      async subscribe(options) {
        world.subscribeCalls.push(options);
        return {
          endpoint: "https://fcm.googleapis.com/fcm/send/new-endpoint",
          toJSON: () => ({ endpoint: "https://fcm.googleapis.com/fcm/send/new-endpoint", expirationTime: null, keys: { p256dh: "BNewKey", auth: "newAuth" } }),
        };
      },
    },
  };
  const clients = {
    async matchAll(options) {
      world.matchAllCalls.push(options);
      return world.windows;
    },
    async openWindow(url) {
      world.opened.push(url);
      return windowAt(new URL(url, ORIGIN).href);
    },
    async claim() {},
  };
  const g = {
    location: new URL(`${ORIGIN}/sw.js`),
    registration,
    clients,
    addEventListener(type, fn) {
      (listeners[type] ??= []).push(fn);
    },
    skipWaiting: async () => {},
    caches: { open: async () => ({ addAll: async () => {}, put: async () => {} }), keys: async () => [], delete: async () => true, match: async () => undefined },
    async fetch(url, init) {
      world.fetches.push({ url, init });
      return { ok: true, status: 200, json: async () => ({ renewed: true }) };
    },
    URL,
    console,
    setTimeout,
  };
  g.self = g;
  vm.createContext(g);
  vm.runInContext(source, g, { filename: "static/sw.js" });

  /** Dispatches an event to the worker; resolves when its waitUntil work is done. */
  world.dispatch = async (type, props) => {
    const waits = [];
    const event = { ...props, waitUntil: (p) => waits.push(p) };
    assert.ok(listeners[type]?.length, `the worker listens for ${type}`);
    for (const fn of listeners[type]) fn(event);
    assert.equal(waits.length, 1, `the ${type} handler hands its work to event.waitUntil once`);
    await waits[0];
  };
  world.push = async (text) => {
    await world.dispatch("push", { data: text === null ? null : { text: () => text } });
    assert.equal(world.shown.length, 1, "every push shows exactly one notification");
    assert.ok(world.shown[0].settled, "waitUntil waited for showNotification");
    return { title: world.shown[0].title, options: plain(world.shown[0].options) };
  };
  world.click = async (url) => {
    const notification = { data: { url }, closed: 0, close() { notification.closed++; } };
    await world.dispatch("notificationclick", { notification });
    assert.equal(notification.closed, 1, "the clicked notification is closed");
    return notification;
  };
  return world;
}

test("the offline shell's install, activate and fetch handlers are still there", () => {
  const w = loadWorker();
  for (const type of ["install", "activate", "fetch", "push", "notificationclick", "pushsubscriptionchange"]) {
    assert.equal(w.listeners[type]?.length, 1, `one ${type} listener`);
  }
});

test("a push for a new ask shows its title, tagged with the ask, linking to it", async () => {
  const w = loadWorker();
  const { title, options } = await w.push(JSON.stringify({ event: "ask", approval_id: "appr_01J9", title: "Merge acme/web#900 <b>now</b>", url: "/approvals/appr_01J9" }));
  assert.equal(title, "Merge acme/web#900 <b>now</b>");
  assert.equal(options.body, "Open to answer");
  assert.equal(options.tag, "appr_01J9");
  assert.deepEqual(options.data, { url: "/approvals/appr_01J9" });
  assert.equal(options.renotify, true);
  assert.equal(options.requireInteraction, true);
});

test("a decided push replaces the ask's notification under the same tag", async () => {
  const w = loadWorker();
  const { title, options } = await w.push(JSON.stringify({ event: "decided", approval_id: "appr_01J9", title: "Merge acme/web#900", status: "approved", url: "/approvals/appr_01J9" }));
  assert.equal(title, "Decided: approved");
  assert.equal(options.body, "Merge acme/web#900");
  assert.equal(options.tag, "appr_01J9");
  assert.deepEqual(options.data, { url: "/approvals/appr_01J9" });
  assert.notEqual(options.requireInteraction, true, "a decided notification does not insist");
});

test("a collapsed push says how many asks wait and opens the inbox", async () => {
  const w = loadWorker();
  const { title, options } = await w.push(JSON.stringify({ event: "collapsed", title: "5 asks wait for you", url: "/", waiting: 5 }));
  assert.equal(title, "5 asks wait for you");
  assert.equal(options.tag, "countersign-waiting");
  assert.deepEqual(options.data, { url: "/" });
});

test("a test push shows its title under the test tag", async () => {
  const w = loadWorker();
  const { title, options } = await w.push(JSON.stringify({ event: "test", title: "Countersign test: notifications work", url: "/devices" }));
  assert.equal(title, "Countersign test: notifications work");
  assert.equal(options.tag, "countersign-test");
  assert.deepEqual(options.data, { url: "/devices" });
});

for (const [event, sent, fallback, stays] of [
  ["passkey_added", "A new passkey was added to your account: Work Mac", "A new passkey was added to your account", true],
  ["passkey_removed", "A passkey was removed from your account: iPhone", "A passkey was removed from your account", false],
]) {
  test(`a ${event} push shows its title, stacks, and a click on it opens the devices page`, async () => {
    const w = loadWorker();
    // Whatever url it carries, it links to /devices, where a passkey is seen and removed.
    const { title, options } = await w.push(JSON.stringify({ event, title: sent, url: "https://evil.example/devices" }));
    assert.equal(title, sent);
    assert.equal(options.tag, undefined, "no tag: a later change never replaces an unread notice");
    assert.deepEqual(options.data, { url: "/devices" });
    assert.equal(options.requireInteraction === true, stays);
    assert.match(options.body, /Devices/);
    const empty = loadWorker();
    const { title: untitled } = await empty.push(JSON.stringify({ event }));
    assert.equal(untitled, fallback);
    const clicked = loadWorker();
    await clicked.click(options.data.url);
    assert.deepEqual(clicked.opened, ["/devices"]);
  });
}

for (const [name, body] of [
  ["an unparsable push", "{not json"],
  ["a push without a body", null],
  ["a push of an unknown event", JSON.stringify({ event: "party", title: "Ignore me", url: "/x" })],
  ["a push of JSON that is not an object", "42"],
]) {
  test(`${name} still shows a generic notification`, async () => {
    const w = loadWorker();
    const { title, options } = await w.push(body);
    assert.equal(title, "Countersign");
    assert.equal(options.tag, "countersign");
    assert.deepEqual(options.data, { url: "/" });
  });
}

for (const url of ["https://evil.example/approvals/appr_1", "//evil.example/x", "/\\evil.example", "javascript:alert(1)", 42]) {
  test(`a push linking to ${JSON.stringify(url)} links to the inbox instead`, async () => {
    const w = loadWorker();
    const { options } = await w.push(JSON.stringify({ event: "ask", approval_id: "appr_1", title: "T", url }));
    assert.deepEqual(options.data, { url: "/" });
  });
}

test("a click focuses the window already on that ask, and opens nothing", async () => {
  const inbox = windowAt(`${ORIGIN}/`);
  const onAsk = windowAt(`${ORIGIN}/approvals/appr_X`);
  const w = loadWorker({ windows: [inbox, onAsk] });
  await w.click("/approvals/appr_X");
  assert.deepEqual(plain(w.matchAllCalls), [{ type: "window", includeUncontrolled: true }]);
  assert.equal(onAsk.focusCalls, 1);
  assert.deepEqual(onAsk.navigations, []);
  assert.equal(inbox.focusCalls, 0);
  assert.deepEqual(inbox.navigations, []);
  assert.deepEqual(w.opened, []);
});

test("a click with another window of the app open focuses it and sends it to the ask", async () => {
  const history = windowAt(`${ORIGIN}/history`);
  const w = loadWorker({ windows: [history] });
  await w.click("/approvals/appr_X");
  assert.equal(history.focusCalls, 1);
  assert.deepEqual(history.navigations, ["/approvals/appr_X"]);
  assert.equal(history.url, `${ORIGIN}/approvals/appr_X`);
  assert.deepEqual(w.opened, []);
});

test("a click with no window of the app open opens the ask", async () => {
  const other = windowAt("https://elsewhere.example/approvals/appr_X");
  const w = loadWorker({ windows: [other] });
  await w.click("/approvals/appr_X");
  assert.deepEqual(w.opened, ["/approvals/appr_X"]);
  assert.equal(other.focusCalls, 0, "a window of another site is not touched");
  assert.deepEqual(other.navigations, []);
});

test("a click with no window at all opens the ask", async () => {
  const w = loadWorker();
  await w.click("/approvals/appr_X");
  assert.deepEqual(w.opened, ["/approvals/appr_X"]);
});

test("a click when the app's window cannot be navigated opens a new one", async () => {
  const uncontrolled = windowAt(`${ORIGIN}/history`, { controlled: false });
  const w = loadWorker({ windows: [uncontrolled] });
  await w.click("/approvals/appr_X");
  assert.deepEqual(uncontrolled.navigations, []);
  assert.deepEqual(w.opened, ["/approvals/appr_X"]);
});

for (const url of ["https://evil.example/approvals/appr_X", "//evil.example/approvals/appr_X", "javascript:alert(1)", undefined]) {
  test(`a click on a notification linking to ${JSON.stringify(url)} never leaves the app`, async () => {
    const history = windowAt(`${ORIGIN}/history`);
    const w = loadWorker({ windows: [history] });
    await w.click(url);
    assert.deepEqual(history.navigations, ["/"]);
    assert.deepEqual(w.opened, []);

    const empty = loadWorker();
    await empty.click(url);
    assert.deepEqual(empty.opened, ["/"]);
  });
}

test("a rotated subscription is renewed with the same key, proven by the old endpoint and auth", async () => {
  const w = loadWorker();
  const applicationServerKey = new Uint8Array([4, 1, 2, 3]).buffer;
  const old = {
    endpoint: "https://fcm.googleapis.com/fcm/send/old-endpoint",
    options: { userVisibleOnly: true, applicationServerKey },
    toJSON: () => ({ endpoint: "https://fcm.googleapis.com/fcm/send/old-endpoint", expirationTime: null, keys: { p256dh: "BOldKey", auth: "oldAuth" } }),
  };
  await w.dispatch("pushsubscriptionchange", { oldSubscription: old, newSubscription: null });
  assert.equal(w.subscribeCalls.length, 1);
  assert.equal(w.subscribeCalls[0].applicationServerKey, applicationServerKey, "subscribes with the old subscription's key");
  assert.equal(w.subscribeCalls[0].userVisibleOnly, true);
  assert.equal(w.fetches.length, 1);
  const { url, init } = w.fetches[0];
  assert.equal(url, "/push/renew");
  assert.equal(init.method, "POST");
  assert.equal(init.headers["Content-Type"], "application/json");
  assert.deepEqual(JSON.parse(init.body), {
    old_endpoint: "https://fcm.googleapis.com/fcm/send/old-endpoint",
    old_auth: "oldAuth",
    subscription: { endpoint: "https://fcm.googleapis.com/fcm/send/new-endpoint", expirationTime: null, keys: { p256dh: "BNewKey", auth: "newAuth" } },
  });
});

test("a subscription change without the old subscription posts nothing", async () => {
  const w = loadWorker();
  await w.dispatch("pushsubscriptionchange", { oldSubscription: null, newSubscription: null });
  assert.equal(w.subscribeCalls.length, 0);
  assert.equal(w.fetches.length, 0);
});
