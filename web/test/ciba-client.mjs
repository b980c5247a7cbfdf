// A CIBA client built on openid-client, the certified OpenID relying party,
// driving one scenario against Countersign: node ciba-client.mjs SCENARIO.
// The client authenticates with private_key_jwt (its ES256 key in CIBA_KEY,
// a private JWK), and discovers the provider at CIBA_ISSUER. It prints one
// JSON line when its request is made ({"event":"initiated"}) and one with
// what it ended with ({"event":"done"}): the test approves or denies in
// between, in Chromium.
//
// Scenarios: approve (authorization_details, poll until tokens, ID token
// verified against the provider's JWKS, the access token introspected),
// deny, expiry, slow_down, ping (the client's notification endpoint on
// CIBA_NOTIFY_PORT hears of the end, then it fetches the tokens), wrong_key
// (assertions signed with CIBA_WRONG_KEY), and hint (CIBA_LOGIN_HINT names
// someone the client may not ask).
import * as client from 'openid-client';
import * as jose from 'jose';
import { createServer } from 'node:http';
import { randomBytes } from 'node:crypto';

const scenario = process.argv[2];
const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};
const issuer = new URL(env('CIBA_ISSUER'));
const clientId = env('CIBA_CLIENT_ID');
const loginHint = process.env.CIBA_LOGIN_HINT || 'ada';
const cibaGrant = 'urn:openid:params:grant-type:ciba';

const say = (o) => console.log(JSON.stringify(o));

async function configWith(jwkText) {
  const jwk = JSON.parse(jwkText);
  const key = await crypto.subtle.importKey('jwk', jwk, { name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign']);
  return client.discovery(issuer, clientId, undefined, client.PrivateKeyJwt({ key, kid: jwk.kid }),
    { execute: [client.allowInsecureRequests] });
}

// failure reads an OAuth error answer off what openid-client threw.
function failure(e) {
  if (e instanceof client.ResponseBodyError || e?.error) {
    return { error: e.error, error_description: e.error_description, status: e.status };
  }
  return { thrown: String(e), code: e?.code };
}

const details = [
  { type: 'countersign_action', action: 'Refund order 1042', target: 'shop.example/orders/1042', amount: { currency: 'EUR', value: '120.00' } },
  { type: 'payment_initiation', instructedAmount: { currency: 'EUR', amount: '120.00' }, creditorName: 'Merchant A',
    creditorAccount: { iban: 'DE02100100109307118603' }, remittanceInformationUnstructured: 'Order 1042' },
];

async function initiate(config, extra = {}) {
  const res = await client.initiateBackchannelAuthentication(config, {
    scope: 'openid', login_hint: loginHint, binding_message: 'Refund 1042', authorization_details: JSON.stringify(details), ...extra,
  });
  say({ event: 'initiated', auth_req_id: res.auth_req_id, expires_in: res.expires_in, interval: res.interval });
  return res;
}

// grant asks the token endpoint once, as a poll does.
async function grant(config, authReqId) {
  try {
    const t = await client.genericGrantRequest(config, cibaGrant, { auth_req_id: authReqId });
    return { tokens: t };
  } catch (e) {
    return failure(e);
  }
}

// described checks the tokens as a relying party would and says what they hold.
async function described(config, tokens) {
  const meta = config.serverMetadata();
  const jwks = jose.createRemoteJWKSet(new URL(meta.jwks_uri));
  const { payload, protectedHeader } = await jose.jwtVerify(tokens.id_token, jwks, { issuer: meta.issuer, audience: clientId });
  const introspection = await client.tokenIntrospection(config, tokens.access_token);
  return {
    id_token: { header: protectedHeader, claims: payload, verified_with_jwks: true },
    claims_from_client: tokens.claims(),
    token_type: tokens.token_type, scope: tokens.scope, expires_in: tokens.expires_in,
    authorization_details: tokens.authorization_details, countersign_proof: tokens.countersign_proof,
    introspection,
  };
}

async function main() {
  const config = await configWith(env('CIBA_KEY'));
  switch (scenario) {
    case 'approve': {
      const res = await initiate(config);
      const tokens = await client.pollBackchannelAuthenticationGrant(config, res);
      say({ event: 'done', ...(await described(config, tokens)) });
      return;
    }
    case 'deny': {
      const res = await initiate(config);
      try {
        await client.pollBackchannelAuthenticationGrant(config, res);
        say({ event: 'done', tokens: true });
      } catch (e) {
        say({ event: 'done', ...failure(e) });
      }
      return;
    }
    case 'expiry': {
      const res = await initiate(config, { requested_expiry: '2' });
      await new Promise((r) => setTimeout(r, 3500));
      say({ event: 'done', ...(await grant(config, res.auth_req_id)) });
      return;
    }
    case 'slow_down': {
      const res = await initiate(config);
      const first = await grant(config, res.auth_req_id);
      const second = await grant(config, res.auth_req_id);
      say({ event: 'done', first: first.error, second: second.error, second_description: second.error_description });
      return;
    }
    case 'ping': {
      const token = randomBytes(24).toString('base64url');
      let heard;
      const pinged = new Promise((resolve) => { heard = resolve; });
      const server = createServer((req, resp) => {
        let body = '';
        req.on('data', (c) => { body += c; });
        req.on('end', () => {
          resp.writeHead(204).end();
          heard({ method: req.method, authorization: req.headers.authorization, type: req.headers['content-type'], body });
        });
      });
      await new Promise((r) => server.listen(Number(env('CIBA_NOTIFY_PORT')), '127.0.0.1', r));
      const res = await initiate(config, { client_notification_token: token });
      const ping = await pinged;
      server.close();
      const body = JSON.parse(ping.body);
      const got = await grant(config, res.auth_req_id);
      say({
        event: 'done', ping_method: ping.method, ping_type: ping.type,
        bearer_matches: ping.authorization === `Bearer ${token}`, auth_req_id_matches: body.auth_req_id === res.auth_req_id,
        ...(got.tokens ? await described(config, got.tokens) : got),
      });
      return;
    }
    case 'wrong_key': {
      const wrong = await configWith(env('CIBA_WRONG_KEY'));
      try {
        await initiate(wrong);
        say({ event: 'done', initiated: true });
      } catch (e) {
        say({ event: 'done', ...failure(e) });
      }
      return;
    }
    case 'hint': {
      try {
        await initiate(config);
        say({ event: 'done', initiated: true });
      } catch (e) {
        say({ event: 'done', ...failure(e) });
      }
      return;
    }
  }
  throw new Error(`no scenario ${scenario}`);
}

main().catch((e) => {
  say({ event: 'crashed', ...failure(e), stack: e?.stack });
  process.exit(1);
});
