// web/redirect.js
var maxUnescapes = 4;
var plainPath = /^\/(?![/\\])[\x21-\x5b\x5d-\x7e]*$/;
function localPath(p) {
  if (typeof p !== "string") return "/";
  let s = p;
  for (let i = 0; i < maxUnescapes; i++) {
    if (!plainPath.test(s)) return "/";
    let d;
    try {
      d = decodeURIComponent(s);
    } catch {
      return "/";
    }
    if (d === s) return p;
    s = d;
  }
  return "/";
}

// web/app.js
var csrf = () => document.querySelector('meta[name="csrf-token"]')?.content ?? "";
async function postJSON(url, body) {
  const res = await fetch(url, {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRF-Token": csrf() },
    body: JSON.stringify(body ?? {})
  });
  let data = {};
  try {
    data = await res.json();
  } catch {
  }
  if (!res.ok) {
    const err = new Error(data.message || `The server answered ${res.status}.`);
    err.code = data.error;
    err.field = data.field;
    throw err;
  }
  return data;
}
function showError(scope, err) {
  scope.querySelectorAll("[data-field-error]").forEach((el) => {
    el.hidden = true;
    document.getElementById(el.id.replace(/-error$/, ""))?.removeAttribute("aria-invalid");
  });
  const atField = err?.field && scope.querySelector(`[data-field-error="${CSS.escape(err.field)}"]`);
  const box = atField || (scope.querySelector("[data-error]") ?? document.querySelector("[data-error]"));
  if (atField) {
    scope.querySelector("[data-error]")?.setAttribute("hidden", "");
    const input = document.getElementById(atField.id.replace(/-error$/, ""));
    input?.setAttribute("aria-invalid", "true");
    input?.focus();
  }
  let text = err?.message ?? String(err);
  if (err?.name === "NotAllowedError") text = "The passkey prompt was closed or timed out. Try again.";
  if (err?.name === "InvalidStateError") text = "This device already has a passkey here.";
  if (box) {
    box.textContent = text;
    box.hidden = false;
  } else {
    alert(text);
  }
}
function busy(button, on) {
  if (!button) return;
  button.disabled = on;
  button.setAttribute("aria-busy", on ? "true" : "false");
}
async function createPasskey(beginURL, finishURL, body) {
  const begin = await postJSON(beginURL, body);
  const publicKey = PublicKeyCredential.parseCreationOptionsFromJSON(begin.options);
  const credential = await navigator.credentials.create({ publicKey });
  return postJSON(finishURL, { ceremony: begin.ceremony, credential: credential.toJSON() });
}
async function getAssertion(begin, extra = {}) {
  const publicKey = PublicKeyCredential.parseRequestOptionsFromJSON(begin.options);
  return navigator.credentials.get({ publicKey, ...extra });
}
function initRegister() {
  const form = document.getElementById("register");
  if (!form) return;
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const button = form.querySelector("[data-testid=register-passkey]");
    busy(button, true);
    try {
      const token = form.dataset.invite;
      const data = Object.fromEntries(new FormData(form));
      const done = await createPasskey(`/invite/${encodeURIComponent(token)}/begin`, `/invite/${encodeURIComponent(token)}/finish`, data);
      location.assign(done.redirect || "/");
    } catch (err) {
      showError(form, err);
    } finally {
      busy(button, false);
    }
  });
}
function initAcceptInvite() {
  const box = document.getElementById("accept-invite");
  if (!box) return;
  const button = box.querySelector("[data-action=accept-invite]");
  button.addEventListener("click", async () => {
    busy(button, true);
    try {
      const base = `/invite/${encodeURIComponent(box.dataset.invite)}/accept`;
      const begin = await postJSON(`${base}/begin`);
      const credential = await getAssertion(begin);
      const done = await postJSON(`${base}/finish`, { ceremony: begin.ceremony, credential: credential.toJSON() });
      location.assign(done.redirect || "/");
    } catch (err) {
      showError(box, err);
    } finally {
      busy(button, false);
    }
  });
}
function initSignIn() {
  const button = document.querySelector("[data-action=sign-in]");
  if (!button) return;
  const next = localPath(document.getElementById("next")?.value);
  let conditional = null;
  const finish = async (begin, credential) => {
    const done = await postJSON("/signin/finish", { ceremony: begin.ceremony, credential: credential.toJSON() });
    location.assign(next !== "/" ? next : localPath(done.redirect || "/"));
  };
  button.addEventListener("click", async () => {
    conditional?.abort();
    busy(button, true);
    try {
      const begin = await postJSON("/signin/begin");
      await finish(begin, await getAssertion(begin));
    } catch (err) {
      showError(document, err);
    } finally {
      busy(button, false);
    }
  });
  if (window.PublicKeyCredential?.isConditionalMediationAvailable) {
    PublicKeyCredential.isConditionalMediationAvailable().then(async (ok) => {
      if (!ok) return;
      conditional = new AbortController();
      try {
        const begin = await postJSON("/signin/begin");
        const credential = await getAssertion(begin, { mediation: "conditional", signal: conditional.signal });
        await finish(begin, credential);
      } catch (err) {
        if (err?.name !== "AbortError") console.debug("passkey autofill:", err);
      }
    });
  }
}
async function pushEndpoint() {
  try {
    if (!("serviceWorker" in navigator)) return "";
    const reg = await navigator.serviceWorker.getRegistration("/");
    const sub = await reg?.pushManager?.getSubscription();
    return sub?.endpoint ?? "";
  } catch {
    return "";
  }
}
function initDevices() {
  const card = document.getElementById("add-passkey");
  if (!card) return;
  const authorise = card.querySelector("[data-action=authorise-device]");
  const here = card.querySelector("[data-action=add-passkey]");
  const makeLink = card.querySelector("[data-action=make-device-link]");
  const granted = card.querySelector("[data-device-grant]");
  const errorBox = card.querySelector("[data-error]");
  let grant = "";
  const run = (button, work) => button.addEventListener("click", async () => {
    busy(button, true);
    if (errorBox) errorBox.hidden = true;
    try {
      await work();
    } catch (err) {
      showError(card, err);
    } finally {
      busy(button, false);
    }
  });
  run(authorise, async () => {
    const begin = await postJSON("/devices/authorise/begin");
    const credential = await getAssertion(begin);
    const done = await postJSON("/devices/authorise/finish", { ceremony: begin.ceremony, credential: credential.toJSON() });
    grant = done.grant;
    card.querySelector("[data-grant-by]").textContent = done.by || "your passkey";
    card.querySelector("[data-grant-until]").textContent = new Date(done.expires_at).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
    granted.hidden = false;
    authorise.hidden = true;
  });
  run(here, async () => {
    const name = document.getElementById("new_device_name")?.value ?? "";
    const begin = await postJSON("/devices/begin", { grant, device_name: name });
    const publicKey = PublicKeyCredential.parseCreationOptionsFromJSON(begin.options);
    const credential = await navigator.credentials.create({ publicKey });
    const done = await postJSON("/devices/finish", { ceremony: begin.ceremony, grant, credential: credential.toJSON(), push_endpoint: await pushEndpoint() });
    location.assign(done.redirect || "/devices");
  });
  run(makeLink, async () => {
    const done = await postJSON("/devices/link", { grant });
    const field = card.querySelector("#device_link");
    field.value = done.link;
    card.querySelector("[data-device-link]").hidden = false;
    here.hidden = makeLink.hidden = true;
    field.focus();
    field.select();
  });
}
function initRemovePasskeys() {
  const card = document.getElementById("passkeys");
  if (!card) return;
  card.querySelectorAll("form[data-remove-passkey]").forEach((form) => {
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      if (!confirm(form.dataset.question)) return;
      const button = form.querySelector("button");
      const errorBox = card.querySelector("[data-error]");
      if (errorBox) errorBox.hidden = true;
      busy(button, true);
      try {
        const base = `/devices/${encodeURIComponent(form.dataset.removePasskey)}/remove`;
        const begin = await postJSON(`${base}/begin`);
        const credential = await getAssertion(begin);
        const done = await postJSON(base, { ceremony: begin.ceremony, credential: credential.toJSON() });
        location.assign(localPath(done.redirect || "/devices"));
      } catch (err) {
        showError(card, err);
        busy(button, false);
      }
    });
  });
}
function initReenableAgents() {
  const card = document.getElementById("agents");
  if (!card) return;
  card.querySelectorAll("form[data-reenable-agent]").forEach((form) => {
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const button = form.querySelector("button");
      const errorBox = card.querySelector("[data-error]");
      if (errorBox) errorBox.hidden = true;
      busy(button, true);
      try {
        const base = `/admin/agents/${encodeURIComponent(form.dataset.reenableAgent)}/reenable`;
        const begin = await postJSON(`${base}/begin`);
        const credential = await getAssertion(begin);
        const done = await postJSON(base, { ceremony: begin.ceremony, credential: credential.toJSON() });
        location.assign(localPath(done.redirect || "/admin/agents"));
      } catch (err) {
        showError(card, err);
        busy(button, false);
      }
    });
  });
}
function initDeviceLink() {
  const form = document.getElementById("device-link");
  if (!form) return;
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const button = form.querySelector("[data-testid=register-device]");
    busy(button, true);
    try {
      const base = `/add-device/${encodeURIComponent(form.dataset.deviceLink)}`;
      const begin = await postJSON(`${base}/begin`, { device_name: form.querySelector("#device_name").value });
      const publicKey = PublicKeyCredential.parseCreationOptionsFromJSON(begin.options);
      const credential = await navigator.credentials.create({ publicKey });
      const done = await postJSON(`${base}/finish`, { ceremony: begin.ceremony, credential: credential.toJSON(), push_endpoint: await pushEndpoint() });
      location.assign(done.redirect || "/");
    } catch (err) {
      showError(form, err);
    } finally {
      busy(button, false);
    }
  });
}
function base64urlBytes(s) {
  const b64 = s.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((s.length + 3) % 4);
  return Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
}
function sameKey(a, b) {
  if (!a) return false;
  const x = new Uint8Array(a);
  return x.length === b.length && x.every((v, i) => v === b[i]);
}
async function sha256Hex(text) {
  const sum = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(sum)].map((b) => b.toString(16).padStart(2, "0")).join("");
}
function pushError(err) {
  if (err?.name === "NotAllowedError") return new Error("Notifications are not allowed for Countersign in this browser. Allow them in its settings, then try again.");
  if (err?.name === "AbortError") return new Error("The browser could not reach its push service. Try again in a moment.");
  return err;
}
function iosOutsideHomeScreen() {
  const ios = /iPhone|iPad|iPod/.test(navigator.userAgent) || navigator.standalone !== void 0 && navigator.maxTouchPoints > 1;
  const standalone = matchMedia("(display-mode: standalone)").matches || navigator.standalone === true;
  return ios && !standalone;
}
function initPush() {
  const card = document.querySelector("[data-vapid-key]");
  if (!card) return;
  const key = base64urlBytes(card.dataset.vapidKey);
  const stateEl = card.querySelector("[data-push-state]");
  const explain = card.querySelector("[data-push-explain]");
  const status = card.querySelector("[data-push-status]");
  const enable = card.querySelector("[data-action=enable-push]");
  const disable = card.querySelector("[data-action=disable-push]");
  const test = card.querySelector("[data-action=test-push]");
  const show = (state, words, why = "") => {
    card.dataset.pushState = state;
    stateEl.textContent = words;
    explain.textContent = why;
    explain.hidden = !why;
    card.querySelectorAll("[data-push-show]").forEach((el) => el.hidden = el.dataset.pushShow !== (state === "on" ? "on" : "off"));
    enable.disabled = state !== "off";
    initPushTab();
  };
  const errorBox = card.querySelector("[data-error]");
  const say = (text) => {
    status.textContent = text;
    status.hidden = !text;
    if (errorBox) errorBox.hidden = true;
  };
  const supported = "serviceWorker" in navigator && "PushManager" in window && "Notification" in window;
  const refresh = async () => {
    if (iosOutsideHomeScreen()) {
      show(
        "home-screen",
        "needs the Home Screen",
        "On iPhone and iPad, notifications work only in the app added to the Home Screen: tap Share, then Add to Home Screen, open Countersign from there and turn notifications on."
      );
      return;
    }
    if (!supported || !window.isSecureContext) {
      show("unsupported", "not supported", window.isSecureContext ? "This browser cannot receive push notifications. Use Safari, Chrome, Edge or Firefox." : "Notifications need Countersign to be served over https.");
      return;
    }
    if (Notification.permission === "denied") {
      show("blocked", "blocked", "Notifications are blocked for this site. Allow them in the browser's site settings, then reload this page.");
      return;
    }
    const reg = await navigator.serviceWorker.ready;
    const sub = await reg.pushManager.getSubscription();
    const mine = sub ? await sha256Hex(sub.endpoint) : "";
    const row = mine && card.querySelector(`[data-endpoint-sha256="${mine}"]`);
    const known = !!row || !!mine && (card.dataset.pushEndpoints || "").split(" ").includes(mine);
    if (row && !row.querySelector("[data-this-browser]")) {
      const badge = document.createElement("span");
      badge.className = "badge";
      badge.dataset.thisBrowser = "";
      badge.textContent = "this browser";
      row.querySelector("strong")?.after(" ", badge);
    }
    const on = known && Notification.permission === "granted";
    show(on ? "on" : "off", on ? "on" : "off");
  };
  enable.addEventListener("click", async () => {
    busy(enable, true);
    say("");
    try {
      const permission = await Notification.requestPermission();
      if (permission !== "granted") {
        throw new Error(permission === "denied" ? "Notifications are blocked for this site. Allow them in the browser's site settings, then try again." : "Notifications were not allowed. Try again and choose Allow.");
      }
      const reg = await navigator.serviceWorker.ready;
      let sub = await reg.pushManager.getSubscription();
      if (sub && !sameKey(sub.options?.applicationServerKey, key)) {
        await sub.unsubscribe();
        sub = null;
      }
      sub ??= await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
      await postJSON("/push/subscribe", sub.toJSON());
      location.reload();
    } catch (err) {
      showError(card, pushError(err));
      busy(enable, false);
      refresh().catch(() => {
      });
    }
  });
  disable.addEventListener("click", async () => {
    busy(disable, true);
    say("");
    try {
      const reg = await navigator.serviceWorker.ready;
      const sub = await reg.pushManager.getSubscription();
      if (sub) {
        try {
          await postJSON("/push/unsubscribe", { endpoint: sub.endpoint });
        } catch (err) {
          if (err.code !== "NOT_FOUND") throw err;
        }
        await sub.unsubscribe();
      }
      location.reload();
    } catch (err) {
      showError(card, pushError(err));
      busy(disable, false);
    }
  });
  test?.addEventListener("click", async () => {
    busy(test, true);
    say("");
    try {
      const done = await postJSON("/push/test");
      say(`Test notification sent to ${done.devices} ${done.devices === 1 ? "device" : "devices"}.`);
    } catch (err) {
      showError(card, err);
    } finally {
      busy(test, false);
    }
  });
  refresh().catch((err) => showError(card, pushError(err)));
}
function initHomeScreenStep() {
  const step = document.querySelector("[data-home-screen]");
  if (step) step.hidden = !iosOutsideHomeScreen();
}
function initCopy() {
  document.querySelectorAll("button[data-copy]").forEach((button) => {
    button.addEventListener("click", async () => {
      const source = document.getElementById(button.dataset.copy);
      const said = button.parentElement.querySelector("[data-copied]");
      if (!source) return;
      const text = source.value ?? source.textContent;
      try {
        await navigator.clipboard.writeText(text);
        if (said) said.textContent = "Copied.";
      } catch {
        getSelection().selectAllChildren(source);
        if (said) said.textContent = "Selected: copy it with your keyboard or menu.";
      }
    });
  });
}
function initRuleExamples() {
  const form = document.getElementById("rule-form");
  if (!form) return;
  document.querySelectorAll("button[data-rule-example]").forEach((button) => {
    button.addEventListener("click", () => {
      const fill = JSON.parse(button.dataset.ruleExample);
      form.querySelectorAll("input[name]:not([type=hidden]), select[name]").forEach((field) => {
        field.value = fill[field.name] ?? "";
      });
      form.querySelector("#rule-id")?.focus();
    });
  });
}
var armAfterMs = 600;
function initDecisions() {
  const root = document.querySelector("[data-approval]");
  if (!root) return;
  const id = root.dataset.approval;
  const base = localPath(root.dataset.decide || `/approvals/${encodeURIComponent(id)}`);
  let armed = false;
  setTimeout(() => {
    armed = true;
    root.querySelectorAll("[data-actions]").forEach((b) => b.dataset.armed = "");
  }, armAfterMs);
  const early = () => !armed;
  const decide = async (decision, text, button, checkCode = "") => {
    busy(button, true);
    try {
      const body = decision === "answer" ? { decision, answer: text } : decision === "reply" ? { decision, reply: text } : decision === "approve_for" ? { decision, minutes: Number(text) } : { decision, question: text };
      if (checkCode) body.check_code = checkCode;
      const edited = decision === "approve" && editedPayload();
      if (edited) Object.assign(body, { decision: "approve_edited", edited_payload: edited });
      const begin = await postJSON(`${base}/challenge`, body);
      const credential = await getAssertion(begin);
      const done = await postJSON(`${base}/decide`, { ceremony: begin.ceremony, credential: credential.toJSON() });
      const to = done.receipt || done.redirect;
      location.assign(to ? localPath(to) : location.href);
    } catch (err) {
      showError(root, err);
      busy(button, false);
    }
  };
  root.querySelectorAll("[data-decision]").forEach((button) => {
    button.addEventListener("click", () => {
      if (!early()) decide(button.dataset.decision, "", button, button.dataset.checkCode);
    });
  });
  const qform = root.querySelector("form[data-question]");
  qform?.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const text = qform.querySelector("textarea").value.trim();
    if (!text) {
      showError(root, new Error("Write your question first."));
      return;
    }
    decide("question", text, qform.querySelector("button"));
  });
  const rform = root.querySelector("form[data-reply]");
  rform?.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const text = rform.querySelector("textarea").value.trim();
    if (!text) {
      showError(root, new Error("Write your reply first."));
      return;
    }
    decide("reply", text, rform.querySelector("button"));
  });
  const wform = root.querySelector("form[data-window]");
  if (wform) {
    const minutes = wform.querySelector("select");
    const length = wform.querySelector("[data-window-length]");
    minutes.addEventListener("change", () => {
      if (length) length.textContent = minutes.selectedOptions[0].textContent;
    });
    wform.addEventListener("submit", (ev) => {
      ev.preventDefault();
      decide("approve_for", minutes.value, wform.querySelector("button[type=submit]"));
    });
    wform.querySelectorAll("[data-window-code]").forEach((button) => {
      button.addEventListener("click", () => {
        decide("approve_for", minutes.value, button, button.dataset.windowCode);
      });
    });
  }
  const aform = root.querySelector("form[data-answer]");
  aform?.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const text = aform.querySelector("textarea").value;
    if (!text.trim()) {
      showError(root, new Error("Write your answer first."));
      return;
    }
    decide("answer", text, aform.querySelector("button"));
  });
}
var editFields = () => [...document.querySelectorAll("[data-edit] [data-edit-path]")];
function editValue(field) {
  switch (field.dataset.editType) {
    case "boolean":
      return field.checked;
    case "number":
    case "integer": {
      const n = field.value.trim() === "" ? NaN : Number(field.value);
      return Number.isFinite(n) ? n : void 0;
    }
    default:
      return field.value;
  }
}
var changedFields = () => editFields().filter((f) => String(editValue(f)) !== f.dataset.original);
function editedPayload() {
  const root = document.querySelector("[data-edit]");
  const changed = changedFields();
  if (!root || changed.length === 0) return null;
  const payload = JSON.parse(root.dataset.payload);
  for (const f of changed) {
    const tokens = f.dataset.editPath.split("/").slice(1).map((t) => t.replaceAll("~1", "/").replaceAll("~0", "~"));
    let node = payload;
    for (const t of tokens.slice(0, -1)) node = node[t];
    node[tokens[tokens.length - 1]] = editValue(f);
  }
  return payload;
}
function initEdits() {
  const root = document.querySelector("[data-edit]");
  if (!root) return;
  const diff = root.querySelector("[data-edit-diff]");
  const list = root.querySelector("[data-edit-changes]");
  const note = document.querySelector("[data-edit-note]");
  const update = () => {
    const changed = changedFields();
    list.replaceChildren(
      ...changed.map((f) => {
        const li = document.createElement("li");
        const name = document.createElement("code");
        name.textContent = root.querySelector(`label[for="${f.id}"]`)?.textContent ?? f.dataset.editPath;
        const was = document.createElement("del");
        was.textContent = f.dataset.original;
        const now = document.createElement("ins");
        now.textContent = String(editValue(f) ?? "(not a number)");
        li.append(name, " was ", was, " now ", now);
        return li;
      })
    );
    diff.hidden = changed.length === 0;
    if (note) {
      note.hidden = changed.length === 0;
      note.textContent = changed.length === 1 ? "Approving signs your 1 change." : `Approving signs your ${changed.length} changes.`;
    }
  };
  editFields().forEach((f) => f.addEventListener("input", update));
  root.querySelector("[data-edit-undo]")?.addEventListener("click", () => {
    for (const f of editFields()) {
      if (f.dataset.editType === "boolean") f.checked = f.dataset.original === "true";
      else f.value = f.dataset.original;
    }
    update();
  });
  update();
}
function initBatch() {
  const bar = document.querySelector("[data-batch-bar]");
  if (!bar) return;
  const picks = () => [...document.querySelectorAll("input[data-batch]:checked")].map((p) => p.value);
  const count = bar.querySelector("[data-batch-count]");
  const buttons = bar.querySelectorAll("[data-batch-decision]");
  const update = () => {
    const n = picks().length;
    count.textContent = n === 0 ? "Pick asks to answer them together." : `${n} picked`;
    buttons.forEach((b) => b.disabled = n === 0 || n > 50);
  };
  document.querySelectorAll("input[data-batch]").forEach((p) => p.addEventListener("change", update));
  buttons.forEach((button) => {
    button.addEventListener("click", async () => {
      busy(button, true);
      try {
        const begin = await postJSON("/batch/challenge", { approval_ids: picks(), decision: button.dataset.batchDecision });
        const credential = await getAssertion(begin);
        const done = await postJSON("/batch/decide", { ceremony: begin.ceremony, credential: credential.toJSON() });
        location.assign(localPath(done.redirect || "/"));
      } catch (err) {
        showError(bar, err);
        busy(button, false);
      }
    });
  });
  update();
}
function initLive() {
  const root = document.querySelector("[data-live]");
  if (!root || !window.EventSource) return;
  const list = root.querySelector("[data-timeline]");
  const status = document.querySelector("[data-testid=status]");
  const source = new EventSource(root.dataset.live);
  source.addEventListener("timeline", (ev) => {
    const e = JSON.parse(ev.data);
    if (list && !list.querySelector(`[data-seq="${e.seq}"]`)) {
      const li = document.createElement("li");
      li.dataset.seq = e.seq;
      const words = (s) => (s || "").replaceAll("_", " ");
      const time = document.createElement("time");
      time.dateTime = e.at;
      localTime(time);
      const what = document.createElement("span");
      what.textContent = ` ${e.actor} \xB7 ${words(e.step)}${e.to && e.to !== e.from ? " \u2192 " + words(e.to) : ""}`;
      li.append(time, what);
      if (e.signed) {
        const badge = document.createElement("span");
        badge.className = "badge status-approved";
        badge.dataset.testid = "runner-signed";
        badge.textContent = "signed by the runner";
        li.append(" ", badge);
      }
      if (e.note) {
        const note = document.createElement("q");
        note.textContent = e.note;
        li.append(" ", note);
      }
      list.append(li);
    }
    if (e.to === "pending" && status?.dataset.status && status.dataset.status !== "pending") {
      location.reload();
      return;
    }
    if (status && e.to) {
      status.textContent = e.to.replaceAll("_", " ");
      status.dataset.status = e.to;
      if (e.to !== "pending") document.querySelectorAll("[data-actions]").forEach((a) => a.hidden = true);
    }
  });
}
function initCountdowns() {
  const items = document.querySelectorAll("time[data-countdown]");
  if (!items.length) return;
  const tick = () => {
    const now = Date.now();
    items.forEach((t) => {
      const left = Math.round((Date.parse(t.dateTime) - now) / 1e3);
      if (left <= 0) {
        t.textContent = "expired";
        return;
      }
      const d = Math.floor(left / 86400), h = Math.floor(left % 86400 / 3600), m = Math.floor(left % 3600 / 60), s = left % 60;
      t.textContent = d > 0 ? `${d}d ${h}h left` : h > 0 ? `${h}h ${m}m left` : m > 0 ? `${m}m ${String(s).padStart(2, "0")}s left` : `${s}s left`;
    });
  };
  tick();
  setInterval(tick, 1e3);
}
function initLocalTimes() {
  document.querySelectorAll("time[data-local]").forEach(localTime);
}
function localTime(t) {
  const at = new Date(t.dateTime);
  if (Number.isNaN(at.getTime())) return;
  const time = at.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  t.textContent = at.toDateString() === (/* @__PURE__ */ new Date()).toDateString() ? time : `${at.toLocaleDateString([], { weekday: "short", day: "numeric", month: "short" })} ${time}`;
  t.title = at.toISOString().slice(0, 16).replace("T", " ") + " UTC";
}
function initNotMine() {
  const sheet = document.querySelector("dialog[data-not-mine-sheet]");
  if (!sheet) return;
  document.querySelectorAll("[data-not-mine-open]").forEach((b) => b.addEventListener("click", () => {
    b.closest("details")?.removeAttribute("open");
    sheet.showModal();
  }));
  sheet.querySelectorAll("[data-sheet-close]").forEach((b) => b.addEventListener("click", () => sheet.close()));
  sheet.querySelector("[data-decision]")?.addEventListener("click", () => sheet.close());
}
async function initPushTab() {
  const tab = document.querySelector("[data-push-tab]");
  if (!tab) return;
  let on = false;
  try {
    if ("Notification" in window && Notification.permission === "granted" && "serviceWorker" in navigator) {
      const reg = await navigator.serviceWorker.getRegistration();
      on = !!(reg && await reg.pushManager.getSubscription());
    }
  } catch {
    on = false;
  }
  const hidden = document.createElement("span");
  hidden.className = "visually-hidden";
  hidden.textContent = "notifications ";
  tab.replaceChildren(hidden, on ? "on" : "off");
  tab.dataset.pushTab = on ? "on" : "off";
  tab.classList.toggle("off", !on);
  tab.hidden = false;
}
function initLocalDatetimes() {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone || "your time zone";
  const pad = (n) => String(n).padStart(2, "0");
  const local = (d) => `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
  document.querySelectorAll("input[type=datetime-local][data-utc-local]").forEach((input) => {
    const utc = /* @__PURE__ */ new Date(`${input.value}Z`);
    if (input.value && !Number.isNaN(utc.getTime())) input.value = local(utc);
    const label = input.form?.querySelector(`label[for="${input.id}"] [data-time-zone]`);
    if (label) label.textContent = `(${zone} time)`;
    const sent = document.createElement("input");
    sent.type = "hidden";
    sent.name = input.name;
    input.removeAttribute("name");
    input.after(sent);
    input.form?.addEventListener("submit", () => {
      const at = new Date(input.value);
      sent.value = Number.isNaN(at.getTime()) ? input.value : at.toISOString();
    });
  });
}
function initConfirms() {
  document.querySelectorAll("form[data-confirm]").forEach((form) => {
    form.addEventListener("submit", (ev) => {
      if (!confirm(form.dataset.confirm)) ev.preventDefault();
    });
  });
}
function initServiceWorker() {
  if ("serviceWorker" in navigator) {
    navigator.serviceWorker.register("/sw.js", { scope: "/" }).catch((err) => console.debug("service worker:", err));
  }
}
initRegister();
initAcceptInvite();
initSignIn();
initDevices();
initRemovePasskeys();
initReenableAgents();
initDeviceLink();
initPush();
initHomeScreenStep();
initCopy();
initRuleExamples();
initDecisions();
initEdits();
initBatch();
initLive();
initCountdowns();
initLocalTimes();
initNotMine();
initPushTab();
initLocalDatetimes();
initConfirms();
initServiceWorker();
performance.mark("countersign:interactive");
export {
  postJSON
};
