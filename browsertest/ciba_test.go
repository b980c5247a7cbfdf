package browsertest

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/apptest/gatetest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/oidc"
)

// cibaKey is a CIBA client's ES256 key: the private JWK its software signs
// assertions with, and the JWKS registered for it.
type cibaKey struct{ private, jwks string }

func newCIBAKey(t *testing.T, kid string) cibaKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwk := jose.JSONWebKey{Key: k, KeyID: kid, Algorithm: string(jose.ES256), Use: "sig"}
	private, err := jwk.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	set, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{jwk.Public()}})
	if err != nil {
		t.Fatal(err)
	}
	return cibaKey{private: string(private), jwks: string(set)}
}

// cibaClient is one run of web/test/ciba-client.mjs: openid-client driving
// a scenario, read a JSON line at a time.
type cibaClient struct {
	t     *testing.T
	lines chan map[string]any
	err   *syncBuffer
}

func runCIBAClient(t *testing.T, scenario string, env ...string) *cibaClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, "node", filepath.Join("..", "web", "test", "ciba-client.mjs"), scenario)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &cibaClient{t: t, lines: make(chan map[string]any, 4), err: &syncBuffer{}}
	cmd.Stderr = c.err
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) == nil {
				c.lines <- line
			}
		}
		_ = cmd.Wait()
	}()
	return c
}

// next waits for the client's line of that event.
func (c *cibaClient) next(event string) map[string]any {
	c.t.Helper()
	select {
	case line, ok := <-c.lines:
		if !ok {
			c.t.Fatalf("the CIBA client ended before %s:\n%s", event, c.err.String())
		}
		if line["event"] != event {
			c.t.Fatalf("the CIBA client said %v, want %s:\n%s", line, event, c.err.String())
		}
		return line
	case <-time.After(90 * time.Second):
		c.t.Fatalf("the CIBA client said nothing of %s in 90 s:\n%s", event, c.err.String())
	}
	return nil
}

// askOf is the ask a CIBA request filed.
func (s *service) askOf(authReqID any) string {
	s.t.Helper()
	id, _ := authReqID.(string)
	r, err := s.env.Store.CIBARequest(context.Background(), core.HashToken(id))
	if err != nil {
		s.t.Fatalf("no CIBA request for auth_req_id %q: %v", id, err)
	}
	return r.ApprovalID
}

// The end-to-end test: openid-client, the certified OpenID client,
// asks for ada's go through CIBA with authorization_details; she approves
// in Chromium with her passkey; the tokens it polls for hold an ID token
// that verifies against the provider's JWKS, the approved details, an access
// token introspection calls active, and countersign_proof, which `countersign
// verify` accepts. The same client is denied, lets a request expire, polls
// too fast, is pinged in ping mode, signs with a key it did not register, and
// names a person it may not ask.
func TestAnOpenIDClientGetsAPasskeySignedAuthorizationThroughCIBA(t *testing.T) {
	NeedChromium(t)
	binary := gatetest.BuildCountersign(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	notify := l.Addr().String()
	_ = l.Close()
	s := startWith(t, apptest.SQLite, map[string]string{"COUNTERSIGN_CHANNEL_PRIVATE_HOSTS": notify, "COUNTERSIGN_CIBA_PER_PERSON": "20"})
	ada := s.signUp("ada", core.RoleOwner)
	s.env.Member(s.env.Account.ID, "bob", core.RoleMember)
	ctx := context.Background()
	key, wrong := newCIBAKey(t, "shop-1"), newCIBAKey(t, "stranger-1")
	register := func(name, mode, endpoint string) *oidc.Client {
		c, err := s.env.Store.RegisterCIBAClient(ctx, models.RegisterCIBAClient{AccountID: s.env.Account.ID, Name: name,
			AuthMethod: oidc.AuthPrivateKeyJWT, JWKS: key.jwks, DeliveryMode: mode, NotificationEndpoint: endpoint,
			PersonIDs: []string{ada.ID}, CreatedBy: ada.ID})
		if err != nil {
			t.Fatalf("register %s: %v", name, err)
		}
		return c
	}
	poll := register("Shop", oidc.DeliveryPoll, "")
	ping := register("Shop (ping)", oidc.DeliveryPing, "http://"+notify+"/ciba")
	envOf := func(c *oidc.Client, more ...string) []string {
		return append([]string{"CIBA_ISSUER=" + s.env.URL, "CIBA_CLIENT_ID=" + c.ID, "CIBA_KEY=" + key.private}, more...)
	}
	keysFile := filepath.Join(t.TempDir(), "keys.json")
	keys, err := json.Marshal(s.keys())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keysFile, keys, 0o644); err != nil {
		t.Fatal(err)
	}
	// approveInChromium opens the ask the request filed and approves it.
	approveInChromium := func(s *service, initiated map[string]any) (id string) {
		id = s.askOf(initiated["auth_req_id"])
		s.page.Go("/approvals/" + id)
		s.page.WaitFor("the ask pending", statusIs("pending"))
		s.answer(id, "[data-testid=approve]")
		s.page.WaitFor("the status approved", statusIs("approved"))
		return id
	}
	// checkTokens checks what the client got as a relying party would, and
	// the proof as `countersign verify` does.
	checkTokens := func(s *service, c *oidc.Client, id string, done map[string]any) {
		t := s.t
		t.Helper()
		a, err := s.env.Store.GetApproval(ctx, s.env.Account.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		idt, _ := done["id_token"].(map[string]any)
		claims, _ := idt["claims"].(map[string]any)
		header, _ := idt["header"].(map[string]any)
		if idt["verified_with_jwks"] != true || claims["sub"] != "ada" || claims["aud"] != c.ID || claims["iss"] != s.env.URL ||
			claims["countersign_payload_sha256"] != a.PayloadSHA256 || header["alg"] != "ES256" {
			t.Errorf("ID token header %v claims %v; want ES256, sub ada, aud %s, iss %s, payload %s", header, claims, c.ID, s.env.URL, a.PayloadSHA256)
		}
		var sent any
		if err := json.Unmarshal([]byte(`[{"type":"countersign_action","action":"Refund order 1042","target":"shop.example/orders/1042","amount":{"currency":"EUR","value":"120.00"}},`+
			`{"type":"payment_initiation","instructedAmount":{"currency":"EUR","amount":"120.00"},"creditorName":"Merchant A","creditorAccount":{"iban":"DE02100100109307118603"},"remittanceInformationUnstructured":"Order 1042"}]`), &sent); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(done["authorization_details"], sent) {
			t.Errorf("authorization_details in the token response = %v, want what was sent, %v", done["authorization_details"], sent)
		}
		in, _ := done["introspection"].(map[string]any)
		if in["active"] != true || in["client_id"] != c.ID || in["sub"] != "ada" || !reflect.DeepEqual(in["authorization_details"], sent) {
			t.Errorf("introspection = %v, want active, client %s, sub ada and the details", in, c.ID)
		}
		if !strings.EqualFold(fmt.Sprint(done["token_type"]), "Bearer") || done["scope"] != "openid" { // openid-client writes bearer
			t.Errorf("token_type %v scope %v, want Bearer and openid", done["token_type"], done["scope"])
		}
		s.checkProof(done["countersign_proof"], id, a.PayloadSHA256, "approve", "ada")
		proofFile := filepath.Join(t.TempDir(), "proof.json")
		raw, _ := json.Marshal(done["countersign_proof"])
		if err := os.WriteFile(proofFile, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(binary, "verify", proofFile, "--keys", keysFile, "--rp-id", "localhost", "--origin", s.env.URL).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "VALID") || !strings.Contains(string(out), a.PayloadSHA256) {
			t.Errorf("countersign verify on the token response's proof: %v, want VALID naming %s\n%s", err, a.PayloadSHA256, out)
		}
	}

	t.Run("approve: tokens, a verified ID token and a proof", func(t *testing.T) {
		s := s.For(t)
		c := runCIBAClient(t, "approve", envOf(poll)...)
		initiated := c.next("initiated")
		if initiated["interval"] != float64(5) {
			t.Errorf("interval = %v, want 5", initiated["interval"])
		}
		id := approveInChromium(s, initiated)
		checkTokens(s, poll, id, c.next("done"))
	})
	t.Run("deny: access_denied", func(t *testing.T) {
		s := s.For(t)
		c := runCIBAClient(t, "deny", envOf(poll)...)
		id := s.askOf(c.next("initiated")["auth_req_id"])
		s.page.Go("/approvals/" + id)
		s.page.WaitFor("the ask pending", statusIs("pending"))
		s.answer(id, "[data-testid=deny]")
		if done := c.next("done"); done["error"] != "access_denied" {
			t.Errorf("after a deny the client got %v, want access_denied", done)
		}
	})
	t.Run("expiry: expired_token", func(t *testing.T) {
		c := runCIBAClient(t, "expiry", envOf(poll)...)
		if initiated := c.next("initiated"); initiated["expires_in"] != float64(2) {
			t.Errorf("expires_in = %v, want the 2 s requested", initiated["expires_in"])
		}
		if done := c.next("done"); done["error"] != "expired_token" {
			t.Errorf("after its expiry the client got %v, want expired_token", done)
		}
	})
	t.Run("polling faster than the interval: slow_down", func(t *testing.T) {
		c := runCIBAClient(t, "slow_down", envOf(poll)...)
		c.next("initiated")
		if done := c.next("done"); done["first"] != "authorization_pending" || done["second"] != "slow_down" {
			t.Errorf("two polls at once got %v, want authorization_pending then slow_down", done)
		}
	})
	t.Run("ping: the client's endpoint hears of the answer", func(t *testing.T) {
		s := s.For(t)
		c := runCIBAClient(t, "ping", envOf(ping, "CIBA_NOTIFY_PORT="+notify[strings.LastIndex(notify, ":")+1:])...)
		id := approveInChromium(s, c.next("initiated"))
		done := c.next("done")
		if done["ping_method"] != "POST" || done["bearer_matches"] != true || done["auth_req_id_matches"] != true || !strings.HasPrefix(fmt.Sprint(done["ping_type"]), "application/json") {
			t.Errorf("the ping: %v; want a JSON POST with the client's bearer token naming its auth_req_id", done)
		}
		checkTokens(s, ping, id, done)
	})
	t.Run("a wrong client key: invalid_client", func(t *testing.T) {
		c := runCIBAClient(t, "wrong_key", envOf(poll, "CIBA_WRONG_KEY="+wrong.private)...)
		if done := c.next("done"); done["error"] != "invalid_client" || done["status"] != float64(401) {
			t.Errorf("assertions signed with an unregistered key got %v, want 401 invalid_client", done)
		}
	})
	t.Run("a person the client may not ask: unknown_user_id", func(t *testing.T) {
		c := runCIBAClient(t, "hint", envOf(poll, "CIBA_LOGIN_HINT=bob")...)
		if done := c.next("done"); done["error"] != "unknown_user_id" {
			t.Errorf("a request for bob got %v, want unknown_user_id", done)
		}
	})
}
