// A host built on the TypeScript MCP SDK's OAuth client. It starts from the
// origin's protected-resource metadata (node ts_sdk_oauth_host.mjs ORIGIN
// CONSENT), connects to the resource it names, written as is and with a
// trailing slash, and for each lets the SDK discover, register, authorize
// (CONSENT?u=<authorization URL> stands in for the person, answering with
// where their browser lands), exchange the code and call a tool. It prints
// what it got as JSON.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';

const [origin, consent] = process.argv.slice(2);
const redirect = 'http://127.0.0.1:9/callback';
const prm = await (await fetch(origin + '/.well-known/oauth-protected-resource')).json();
const out = { origin_resource: prm.resource, endpoints: {} };

for (const endpoint of [prm.resource, prm.resource + '/']) {
  let info, tokens, verifier, authorizeAt;
  const provider = {
    get redirectUrl() { return redirect; },
    get clientMetadata() {
      return { client_name: 'TS SDK Host', redirect_uris: [redirect], grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'], token_endpoint_auth_method: 'none' };
    },
    clientInformation() { return info; },
    saveClientInformation(i) { info = i; },
    tokens() { return tokens; },
    saveTokens(t) { tokens = t; },
    redirectToAuthorization(u) { authorizeAt = u; },
    saveCodeVerifier(v) { verifier = v; },
    codeVerifier() { return verifier; },
  };
  const first = new StreamableHTTPClientTransport(new URL(endpoint), { authProvider: provider });
  try {
    await new Client({ name: 'ts-sdk-oauth-host', version: '1' }).connect(first);
    throw new Error(`${endpoint}: connected without authorizing`);
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
  }
  if (!authorizeAt) throw new Error(`${endpoint}: the SDK never asked the person`);
  const landed = new URL(await (await fetch(consent + '?u=' + encodeURIComponent(authorizeAt.href))).text());
  await first.finishAuth(landed.searchParams.get('code'));

  const client = new Client({ name: 'ts-sdk-oauth-host', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(endpoint), { authProvider: provider }));
  const tools = await client.listTools();
  const call = await client.callTool({ name: 'approvals_list', arguments: {} });
  out.endpoints[endpoint] = {
    client_id: info.client_id, resource: authorizeAt.searchParams.get('resource'), scope: tokens.scope,
    tools: tools.tools.length, call_error: call.isError === true,
  };
  await client.close();
}
console.log(JSON.stringify(out));
