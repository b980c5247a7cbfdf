package passkey_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"testing"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/passkey"
	"github.com/countersign/countersign/proof"
)

const origin = "http://localhost:8080"

func newRP(t *testing.T) *passkey.RP {
	t.Helper()
	rp, err := passkey.New(origin)
	if err != nil {
		t.Fatal(err)
	}
	return rp
}

// enrolled registers a software passkey for a new person through the RP's
// own ceremony and returns both, the key on the person.
func enrolled(t *testing.T, rp *passkey.RP) (*passkey.User, *apptest.Authenticator) {
	t.Helper()
	u := &passkey.User{ID: people.NewPersonID(), Subject: "ada", DisplayName: "Ada"}
	options, session, err := rp.BeginRegistration(u)
	if err != nil {
		t.Fatalf("begin registration: %v", err)
	}
	a := apptest.NewAuthenticator()
	credential, err := a.Register(origin, options)
	if err != nil {
		t.Fatalf("register: %v", err)
	}
	key, err := rp.FinishRegistration(u, session, credential, "Mac")
	if err != nil {
		t.Fatalf("finish registration: %v", err)
	}
	if key.ID != a.CredentialIDString() || key.Name != "Mac" || key.Credential == "" || key.PublicKey == "" {
		t.Fatalf("the device key = %+v, want the authenticator's credential named Mac", key)
	}
	u.Keys = []people.DeviceKey{*key}
	return u, a
}

func TestRegistrationNeedsUserVerification(t *testing.T) {
	rp := newRP(t)
	u := &passkey.User{ID: people.NewPersonID(), Subject: "bob"}
	options, session, err := rp.BeginRegistration(u)
	if err != nil {
		t.Fatal(err)
	}
	a := apptest.NewAuthenticator()
	a.Misbehave.NoUserVerification = true
	credential, err := a.Register(origin, options)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rp.FinishRegistration(u, session, credential, "Phone"); core.CodeOf(err) != core.PermissionDenied {
		t.Fatalf("a passkey made without user verification: %v, want PERMISSION_DENIED", err)
	}
}

func TestSignInFindsThePersonOfThePasskey(t *testing.T) {
	rp := newRP(t)
	people := map[string]*passkey.User{}
	enroll := func() (*passkey.User, *apptest.Authenticator) {
		u, a := enrolled(t, rp)
		people[u.ID] = u
		return u, a
	}
	lookup := func(personID string) (*passkey.User, error) {
		if u, ok := people[personID]; ok {
			return u, nil
		}
		return nil, core.Refuse(core.NotFound, "person", "no such person")
	}
	signIn := func(a *apptest.Authenticator) (*passkey.Assertion, error) {
		options, session, err := rp.BeginSignIn()
		if err != nil {
			t.Fatal(err)
		}
		body, err := a.Assert(origin, options)
		if err != nil {
			t.Fatalf("assert: %v", err)
		}
		return rp.FinishSignIn(session, body, lookup)
	}
	u, a := enroll()
	got, err := signIn(a)
	if err != nil || got.PersonID != u.ID || got.CredentialID != a.CredentialIDString() || got.SignCount != a.Counter {
		t.Fatalf("sign-in = %+v, %v; want ada's passkey at counter %d", got, err, a.Counter)
	}

	cases := []struct {
		name  string
		spoil func(a *apptest.Authenticator)
	}{
		{"a passkey of a person nobody knows", func(a *apptest.Authenticator) { a.UserHandle = []byte("per_nobody") }},
		{"an assertion from another origin", func(a *apptest.Authenticator) { a.Misbehave.Origin = "https://evil.example" }},
		{"an assertion without user verification", func(a *apptest.Authenticator) { a.Misbehave.NoUserVerification = true }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, a := enroll()
			tc.spoil(a)
			if got, err := signIn(a); err == nil {
				t.Fatalf("signed in as %+v", got)
			}
		})
	}
}

// A decision is signed over exactly the challenge the server computed, by
// one of the person's own passkeys; the proof built from it verifies.
func TestADecisionSignatureCoversItsChallengeAndMakesAProof(t *testing.T) {
	rp := newRP(t)
	u, a := enrolled(t, rp)
	sum := sha256.Sum256([]byte(`{"review":{"url":"https://review.example.com/r/1"}}`))
	payloadSHA := hex.EncodeToString(sum[:])
	nonce := bytes.Repeat([]byte{7}, proof.NonceSize)
	challenge := proof.Challenge(proof.Domain, "apr_1", payloadSHA, "approve", nonce)

	options, session, err := rp.BeginDecision(u, challenge)
	if err != nil {
		t.Fatal(err)
	}
	body, err := a.Assert(origin, options)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("a signature over another decision's challenge is refused", func(t *testing.T) {
		other := proof.Challenge(proof.Domain, "apr_1", payloadSHA, "deny", nonce)
		if _, err := rp.FinishDecision(u, session, body, other); core.CodeOf(err) != core.PermissionDenied {
			t.Fatalf("finish over another challenge: %v, want PERMISSION_DENIED", err)
		}
	})
	t.Run("a decision prompt cannot confirm adding a device", func(t *testing.T) {
		if _, err := rp.FinishDeviceAdd(u, session, body, passkey.DeviceAddChallenge(u.ID, nonce)); core.CodeOf(err) != core.PermissionDenied {
			t.Fatalf("finish device add with a decision's session: %v, want PERMISSION_DENIED", err)
		}
	})
	got, err := rp.FinishDecision(u, session, body, challenge)
	if err != nil {
		t.Fatalf("finish decision: %v", err)
	}
	key, err := base64.RawURLEncoding.DecodeString(u.Keys[0].PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	p := rp.Proof(got, key, "apr_1", payloadSHA, "approve", nonce, proof.Unsigned{Person: "ada"})
	res, err := proof.Verify(p, proof.Expect{RPID: "localhost", Origin: origin})
	if err != nil || res.Decision != "approve" || res.CredentialID != a.CredentialIDString() {
		t.Fatalf("verify the proof: %+v, %v", res, err)
	}

	t.Run("a person with no passkey cannot begin", func(t *testing.T) {
		if _, _, err := rp.BeginDecision(&passkey.User{ID: "per_none", Subject: "nobody"}, challenge); core.CodeOf(err) != core.FailedPrecondition {
			t.Fatalf("begin with no passkey: %v, want FAILED_PRECONDITION", err)
		}
	})
	t.Run("another person's passkey cannot answer", func(t *testing.T) {
		_, other := enrolled(t, rp)
		options, _, err := rp.BeginDecision(u, challenge)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.Assert(origin, options); err == nil {
			t.Fatalf("a passkey outside allowCredentials signed")
		}
	})
}
