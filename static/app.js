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
    throw err;
  }
  return data;
}
function showError(scope, err) {
  const box = scope.querySelector("[data-error]") ?? document.querySelector("[data-error]");
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
function initSignIn() {
  const button = document.querySelector("[data-action=sign-in]");
  if (!button) return;
  const next = document.getElementById("next")?.value || "/";
  let conditional = null;
  const finish = async (begin, credential) => {
    const done = await postJSON("/signin/finish", { ceremony: begin.ceremony, credential: credential.toJSON() });
    location.assign(next.startsWith("/") && !next.startsWith("//") ? next : done.redirect || "/");
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
function initDevices() {
  const button = document.querySelector("[data-action=add-passkey]");
  if (!button) return;
  button.addEventListener("click", async () => {
    busy(button, true);
    try {
      const name = document.getElementById("new_device_name")?.value ?? "";
      await createPasskey("/devices/begin", "/devices/finish", { device_name: name });
      location.reload();
    } catch (err) {
      showError(document, err);
    } finally {
      busy(button, false);
    }
  });
}
function initDecisions() {
  const root = document.querySelector("[data-approval]");
  if (!root) return;
  const id = root.dataset.approval;
  const decide = async (decision, question, button) => {
    busy(button, true);
    try {
      const begin = await postJSON(`/approvals/${encodeURIComponent(id)}/challenge`, { decision, question });
      const credential = await getAssertion(begin);
      const done = await postJSON(`/approvals/${encodeURIComponent(id)}/decide`, { ceremony: begin.ceremony, credential: credential.toJSON() });
      location.assign(done.redirect || location.href);
    } catch (err) {
      showError(root, err);
      busy(button, false);
    }
  };
  root.querySelectorAll("[data-decision]").forEach((button) => {
    button.addEventListener("click", () => decide(button.dataset.decision, "", button));
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
      const time = document.createElement("time");
      time.dateTime = e.at;
      time.textContent = new Date(e.at).toLocaleString();
      const what = document.createElement("span");
      what.textContent = ` ${e.actor} \xB7 ${e.step}${e.to ? " \u2192 " + e.to : ""}`;
      li.append(time, what);
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
      status.textContent = e.to.replace("_", " ");
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
      t.textContent = d > 0 ? `${d}d ${h}h left` : h > 0 ? `${h}h ${m}m left` : `${m}m ${String(s).padStart(2, "0")}s left`;
    });
  };
  tick();
  setInterval(tick, 1e3);
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
initSignIn();
initDevices();
initDecisions();
initLive();
initCountdowns();
initConfirms();
initServiceWorker();
export {
  postJSON
};
