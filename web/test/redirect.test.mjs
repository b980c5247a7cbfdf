// Tests the page script's redirect check (web/redirect.js) on the cases the
// server's check is held to (handlers/testdata/redirects.json). Run: node
// --test web/test/redirect.test.mjs (handlers/redirect_test.go runs it under
// go test).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { localPath } from "../redirect.js";

const cases = JSON.parse(readFileSync(new URL("../../handlers/testdata/redirects.json", import.meta.url), "utf8"));

test("the table holds at least 20 bypass spellings", () => {
  assert.ok(cases.filter((c) => c.want === "/" && c.next !== "/").length >= 20);
});

for (const c of cases) {
  test(`${c.name}: ${JSON.stringify(c.next)} leads to ${c.want}`, () => {
    assert.equal(localPath(c.next), c.want);
  });
}

test("a value that is not a string leads to /", () => {
  for (const v of [undefined, null, 42, ["/x"]]) assert.equal(localPath(v), "/");
});
