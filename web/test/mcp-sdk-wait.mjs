// Files an ask with approvals_create and wait: true from the official
// TypeScript SDK, as a host that takes URL elicitation: the call is answered
// with the URL elicitation required error (-32042) naming the ask's page;
// the script prints that page as a JSON line, waits for
// notifications/elicitation/complete (the Go test that runs it has a person
// answer on the page meanwhile), calls again with the same arguments and
// prints the answered ask. The SDK speaks 2025-11-25, its newest revision.
//
// Usage: node web/test/mcp-sdk-wait.mjs ENDPOINT_URL TOKEN TITLE
// Prints {"elicitation": {...}} then {"ask": {...}}; exits 1 on a failed
// check, 2 on bad usage.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitationCompleteNotificationSchema, ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";

const [endpoint, token, title] = process.argv.slice(2);
if (!endpoint || !token || !title) {
  console.error("usage: node web/test/mcp-sdk-wait.mjs ENDPOINT_URL TOKEN TITLE");
  process.exit(2);
}

function fail(message) {
  console.error(`mcp-sdk-wait: ${message}`);
  process.exit(1);
}

const client = new Client({ name: "countersign-sdk-wait", version: "1.0.0" }, { capabilities: { elicitation: { url: {} } } });
const completed = new Promise((resolve) => {
  client.setNotificationHandler(ElicitationCompleteNotificationSchema, (n) => resolve(n.params.elicitationId));
});
const transport = new StreamableHTTPClientTransport(new URL(endpoint), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
await client.connect(transport);

const args = {
  kind: "review", title, approve_means: "I go ahead", deny_means: "I stop",
  payload: { review: { url: "https://example.com/release" } }, wait: true,
};
let elicitation;
try {
  const result = await client.callTool({ name: "approvals_create", arguments: args });
  fail(`approvals_create with wait: true answered at once: ${JSON.stringify(result)}`);
} catch (err) {
  if (!(err instanceof McpError) || err.code !== ErrorCode.UrlElicitationRequired) {
    fail(`approvals_create: ${err}, want the URL elicitation required error`);
  }
  elicitation = err.data?.elicitations?.[0];
  if (elicitation?.mode !== "url" || !elicitation.url || !elicitation.elicitationId) {
    fail(`the error names no URL elicitation: ${JSON.stringify(err.data)}`);
  }
}
console.log(JSON.stringify({ elicitation }));

let timer;
const id = await Promise.race([
  completed,
  new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error("no notifications/elicitation/complete within 60 s")), 60_000);
  }),
]).catch((err) => fail(err.message));
clearTimeout(timer);
if (id !== elicitation.elicitationId) {
  fail(`elicitation ${id} completed, want ${elicitation.elicitationId}`);
}
const again = await client.callTool({ name: "approvals_create", arguments: args });
if (again.isError || !again.structuredContent) {
  fail(`the call again was refused: ${again.content?.[0]?.text}`);
}
console.log(JSON.stringify({ ask: again.structuredContent }));
await client.close();
