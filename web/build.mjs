// Builds the front end into static/: the page script and the service worker.
// The service worker's VERSION is a hash of everything it caches, so a new
// build of any of them installs a new worker. Its SHELL names the script and
// the style sheet by the hashed names the service gives them (static/assets.go:
// app.<first 12 hex digits of the content's SHA-256>.js). Output is
// deterministic: CI rebuilds and fails when static/ differs from what is
// committed.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import * as esbuild from "esbuild";

const common = { bundle: true, target: "es2022", legalComments: "none", logLevel: "warning" };

await esbuild.build({ ...common, entryPoints: ["web/app.js"], outfile: "static/app.js", format: "esm" });

const hash = createHash("sha256");
for (const f of ["static/app.js", "static/app.css", "static/offline.html", "static/manifest.webmanifest", "web/sw.js"]) {
  hash.update(f).update(readFileSync(f));
}
const version = hash.digest("hex").slice(0, 16);

// hashed is the path under which the service serves static/name for good.
const hashed = (name) => {
  const sum = createHash("sha256").update(readFileSync(`static/${name}`)).digest("hex").slice(0, 12);
  return `/static/${name.replace(/(\.[^./]+)$/, `.${sum}$1`)}`;
};
const shell = ["/offline.html", hashed("app.css"), hashed("app.js"), "/static/icons/icon-192.png", "/manifest.webmanifest"];

await esbuild.build({
  ...common, entryPoints: ["web/sw.js"], outfile: "static/sw.js", format: "iife",
  define: { VERSION: JSON.stringify(version), SHELL: JSON.stringify(shell) },
});
console.log(`built static/app.js and static/sw.js (version ${version})`);
