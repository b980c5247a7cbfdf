// Checks Countersign's MCP endpoint with the official TypeScript SDK, as an
// outside agent would use it: connect over Streamable HTTP with a bearer token,
// list the tools, file an ask, read it back, find it by its payload hash,
// subscribe to its resource, withdraw it and hear of that, and be refused for
// a page_size over the limit. Then the session loop: start a session, ask the
// person a question with choices in it, heartbeat until a person answers it
// (the Go test that runs this script answers as the person), find the answer
// on exactly one heartbeat and in approval_status, and end the session.
//
// Usage: node web/test/mcp-sdk-check.mjs [ENDPOINT_URL] [TOKEN]
//   or COUNTERSIGN_MCP_URL and COUNTERSIGN_MCP_TOKEN in the environment.
// Prints one JSON summary line; exits 1 on the first failed check, 2 on bad usage.
import { randomBytes } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const endpoint = process.argv[2] || process.env.COUNTERSIGN_MCP_URL;
const token = process.argv[3] || process.env.COUNTERSIGN_MCP_TOKEN;
if (!endpoint || !token) {
  console.error("usage: node web/test/mcp-sdk-check.mjs ENDPOINT_URL TOKEN (or COUNTERSIGN_MCP_URL and COUNTERSIGN_MCP_TOKEN)");
  process.exit(2);
}

class CheckFailed extends Error {}

function check(ok, message) {
  if (!ok) throw new CheckFailed(message);
}

// structured returns a successful tool result's structured content, or fails
// with the refusal text.
function structured(name, result) {
  const text = result.content?.[0]?.text ?? "";
  check(!result.isError, `${name} was refused: ${text}`);
  check(result.structuredContent && typeof result.structuredContent === "object", `${name} returned no structuredContent`);
  return result.structuredContent;
}

const approvalsTools = [
  "approvals_create", "approvals_get", "approvals_list", "approvals_add_progress",
  "approvals_request_auto_approve", "approvals_get_auto_approve_policy", "approvals_revoke_auto_approve_policy",
];

async function main() {
  const client = new Client({ name: "countersign-sdk-check", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(endpoint), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  try {
    const server = client.getServerVersion();
    check(server?.name === "countersign", `server name is ${JSON.stringify(server?.name)}, want "countersign"`);

    const { tools } = await client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    for (const name of approvalsTools) {
      const tool = byName.get(name);
      check(tool, `tools/list lacks ${name}; it has ${[...byName.keys()].join(", ") || "nothing"}`);
      check(tool.outputSchema?.type === "object", `${name} has no object outputSchema`);
    }

    // A head no other run used, so that the payload hash is this run's alone.
    const head = randomBytes(20).toString("hex");
    const created = structured("approvals_create", await client.callTool({
      name: "approvals_create",
      arguments: {
        kind: "pull_request",
        title: "Merge acme/web#900",
        summary: "Fixes the login redirect.",
        approve_means: "I merge #900; nothing rolls",
        deny_means: "#900 stays open",
        payload: { pull_request: { repo: "Acme/Web", number: 900, head, title: "Fix login redirect" } },
        context: { plan_id: "plan_1", plan_item: "item_2", job_id: "job_42" },
      },
    }));
    const id = created.approval_id;
    const hash = created.payload_sha256;
    check(typeof id === "string" && id !== "", `approvals_create returned no approval_id: ${JSON.stringify(created)}`);
    check(/^[0-9a-f]{64}$/.test(hash ?? ""), `approvals_create returned payload_sha256 ${JSON.stringify(hash)}, want 64 lower-case hex`);
    check(created.status === "pending", `approvals_create status is ${created.status}, want pending`);

    const got = structured("approvals_get", await client.callTool({ name: "approvals_get", arguments: { approval_id: id } }));
    check(got.approval_id === id, `approvals_get returned ${got.approval_id}, want ${id}`);
    check(got.status === "pending", `approvals_get status is ${got.status}, want pending`);
    check(got.payload_sha256 === hash, `approvals_get payload_sha256 is ${got.payload_sha256}, want ${hash} as create returned`);
    check(got.payload?.pull_request?.head === head, `approvals_get payload head is ${got.payload?.pull_request?.head}, want ${head}`);

    const list = structured("approvals_list", await client.callTool({ name: "approvals_list", arguments: { payload_sha256: hash } }));
    check(Array.isArray(list.approvals), `approvals_list returned no approvals array: ${JSON.stringify(list)}`);
    check(list.approvals.length === 1, `approvals_list by payload_sha256 found ${list.approvals.length}, want exactly 1`);
    check(list.approvals[0].approval_id === id, `approvals_list found ${list.approvals[0].approval_id}, want ${id}`);

    // Subscribe to the ask's resource: withdrawing it below must be heard.
    const uri = `countersign://approvals/${id}`;
    const heard = new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new CheckFailed(`no notifications/resources/updated for ${uri} within 10 s of the withdrawal`)), 10_000);
      client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
        if (n.params.uri === uri) {
          clearTimeout(timer);
          resolve(n.params.uri);
        }
      });
    });
    heard.catch(() => {}); // awaited below; this keeps an early rejection from going unhandled
    await client.subscribeResource({ uri });

    const withdrawn = structured("approvals_add_progress", await client.callTool({
      name: "approvals_add_progress",
      arguments: { approval_id: id, step: "stale", expected_state: "pending" },
    }));
    check(withdrawn.approval_id === id, `approvals_add_progress returned ${withdrawn.approval_id}, want ${id}`);
    check(withdrawn.status === "stale", `approvals_add_progress status is ${withdrawn.status}, want stale`);
    const updated = await heard;
    const read = await client.readResource({ uri });
    const resource = JSON.parse(read.contents?.[0]?.text ?? "null");
    check(resource?.approval_id === id, `resources/read ${uri} returned ${JSON.stringify(read)}`);

    const refused = await client.callTool({ name: "approvals_list", arguments: { page_size: 500 } });
    const refusedText = refused.content?.[0]?.text ?? "";
    check(refused.isError === true, `approvals_list page_size 500 was not refused: ${JSON.stringify(refused)}`);
    check(refusedText.startsWith("INVALID_ARGUMENT"), `approvals_list page_size 500 refusal text is ${JSON.stringify(refusedText)}, want it to start with INVALID_ARGUMENT`);

    const session = await sessionLoop(client);

    return {
      ok: true,
      session,
      server: `${server.name} ${server.version}`,
      tools: tools.map((t) => t.name).sort(),
      approval_id: id,
      payload_sha256: hash,
      listed: list.approvals.length,
      final_status: withdrawn.status,
      updated,
      resource_status: resource.status,
      refusal: refusedText.split(":")[0],
    };
  } finally {
    await client.close();
  }
}

// sessionLoop runs an agent's session loop: start → a question to the person
// → heartbeats while it waits → the answer, on one heartbeat only → end.
async function sessionLoop(client) {
  const call = async (name, args) => structured(name, await client.callTool({ name, arguments: args }));
  const started = await call("session_start", { label: "sdk check: which branch" });
  const sessionId = started.sessionId;
  check(typeof sessionId === "string" && sessionId !== "" && started.state === "active", `session_start returned ${JSON.stringify(started)}`);

  const asked = await call("approval_request", {
    kind: "agent_request",
    title: "Which branch should the fix go to?",
    proposal: { mode: "advisory" },
    question: { choices: ["main", "next"] },
    sessionId,
    expiresInMinutes: 30,
    idempotencyKey: randomBytes(16).toString("hex"),
  });
  const approvalId = asked.approvalId;
  check(typeof approvalId === "string" && asked.status === "pending", `approval_request returned ${JSON.stringify(asked)}`);

  // Heartbeat until the person answers (at most a minute).
  let waiting = null;
  let answered = null;
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; ) {
    const beat = await call("session_heartbeat", { sessionId });
    if (beat.instructions.length > 0) {
      answered = beat;
      break;
    }
    check(beat.state === "waiting" && beat.waitingOn.includes(approvalId), `a heartbeat while the question waits returned ${JSON.stringify(beat)}`);
    waiting ??= beat.state;
    await new Promise((r) => setTimeout(r, 100));
  }
  check(answered, "no heartbeat carried the answer within a minute");
  check(answered.instructions.length === 1, `the heartbeat carried ${answered.instructions.length} instructions, want 1`);
  const instruction = answered.instructions[0];
  check(instruction.approvalId === approvalId && instruction.status === "approved", `the instruction is ${JSON.stringify(instruction)}`);
  const again = await call("session_heartbeat", { sessionId });
  check(again.instructions.length === 0 && again.state === "active", `the next heartbeat returned ${JSON.stringify(again)}, want no instructions and active`);

  const status = await call("approval_status", { approvalId });
  check(status.status === "approved", `approval_status is ${JSON.stringify(status)}`);

  const ended = await call("session_end", { sessionId });
  check(ended.state === "ended", `session_end returned ${JSON.stringify(ended)}`);
  const late = await client.callTool({ name: "session_heartbeat", arguments: { sessionId } });
  const lateText = late.content?.[0]?.text ?? "";
  check(late.isError === true && lateText.startsWith("FAILED_PRECONDITION"), `a heartbeat after session_end returned ${JSON.stringify(late)}`);

  return {
    session_id: sessionId,
    approval_id: approvalId,
    waiting: waiting ?? "",
    answer: instruction.answer ?? null,
    status_answer: status.answer ?? null,
    instructions_after: again.instructions.length,
    ended: ended.state,
    after_end: lateText.split(":")[0],
  };
}

// describe turns an error into one line; a schema error of the SDK (a zod
// error, such as a tools/list the SDK rejects) lists each issue with its path.
function describe(err) {
  if (err instanceof CheckFailed) return `check failed: ${err.message}`;
  if (Array.isArray(err?.issues)) {
    return `the SDK rejected a response: ${err.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`;
  }
  return `error: ${err?.message ?? err}`;
}

try {
  console.log(JSON.stringify(await main()));
} catch (err) {
  const message = describe(err);
  console.log(JSON.stringify({ ok: false, error: message }));
  console.error(`mcp-sdk-check: ${message}`);
  process.exit(1);
}
