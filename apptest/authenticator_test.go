package apptest_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/protocol/webauthncose"

	"github.com/countersign/countersign/apptest"
)

const page = "http://localhost:8080/invite/x"

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func creationOptions(challenge []byte, exclude ...[]byte) []byte {
	ex := []map[string]string{}
	for _, id := range exclude {
		ex = append(ex, map[string]string{"type": "public-key", "id": b64(id)})
	}
	b, _ := json.Marshal(map[string]any{
		"rp":                 map[string]string{"id": "localhost", "name": "Countersign"},
		"user":               map[string]string{"id": b64([]byte("per_1")), "name": "ada", "displayName": "Ada"},
		"challenge":          b64(challenge),
		"pubKeyCredParams":   []map[string]any{{"type": "public-key", "alg": -7}},
		"excludeCredentials": ex,
	})
	return b
}

func requestOptions(challenge []byte, rpID string, allow ...[]byte) []byte {
	al := []map[string]string{}
	for _, id := range allow {
		al = append(al, map[string]string{"type": "public-key", "id": b64(id)})
	}
	b, _ := json.Marshal(map[string]any{"challenge": b64(challenge), "rpId": rpID, "allowCredentials": al, "userVerification": "required"})
	return b
}

func registered(t *testing.T) *apptest.Authenticator {
	t.Helper()
	a := apptest.NewAuthenticator()
	challenge := bytes.Repeat([]byte{7}, 32)
	raw, err := a.Register(page, creationOptions(challenge))
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := protocol.ParseCredentialCreationResponseBytes(raw)
	if err != nil {
		t.Fatalf("go-webauthn cannot read the registration: %v\n%s", err, raw)
	}
	cd, ad := parsed.Response.CollectedClientData, parsed.Response.AttestationObject.AuthData
	rpHash := sha256.Sum256([]byte("localhost"))
	if cd.Type != protocol.CreateCeremony || cd.Challenge != b64(challenge) || cd.Origin != "http://localhost:8080" {
		t.Fatalf("client data %+v", cd)
	}
	if parsed.Response.AttestationObject.Format != "none" || !bytes.Equal(ad.RPIDHash, rpHash[:]) || ad.Counter != 0 ||
		!ad.Flags.UserPresent() || !ad.Flags.UserVerified() || !ad.Flags.HasAttestedCredentialData() ||
		!bytes.Equal(ad.AttData.CredentialID, a.CredentialID) || !bytes.Equal(ad.AttData.CredentialPublicKey, a.PublicKeyCOSE()) {
		t.Fatalf("attestation: fmt %q, authData %+v", parsed.Response.AttestationObject.Format, ad)
	}
	if string(a.UserHandle) != "per_1" || a.RPID != "localhost" {
		t.Fatalf("registered user handle %q, RP ID %q", a.UserHandle, a.RPID)
	}
	return a
}

// assert signs challenge and returns the parsed assertion, checking the signature.
func assert(t *testing.T, a *apptest.Authenticator, challenge []byte) *protocol.ParsedCredentialAssertionData {
	t.Helper()
	raw, err := a.Assert("http://localhost:8080/approvals/x", requestOptions(challenge, "localhost", a.CredentialID))
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(raw)
	if err != nil {
		t.Fatalf("go-webauthn cannot read the assertion: %v\n%s", err, raw)
	}
	key, err := webauthncose.ParsePublicKey(a.PublicKeyCOSE())
	if err != nil {
		t.Fatal(err)
	}
	cdHash := sha256.Sum256(parsed.Raw.AssertionResponse.ClientDataJSON)
	ok, err := webauthncose.VerifySignature(key, append(bytes.Clone(parsed.Raw.AssertionResponse.AuthenticatorData), cdHash[:]...), parsed.Response.Signature)
	if err != nil || !ok {
		t.Fatalf("the signature does not verify with the public key: %v", err)
	}
	if !bytes.Equal(parsed.RawID, a.CredentialID) || string(parsed.Response.UserHandle) != "per_1" ||
		parsed.Response.CollectedClientData.Type != protocol.AssertCeremony || parsed.Response.CollectedClientData.Challenge != b64(challenge) {
		t.Fatalf("assertion %+v", parsed.Response)
	}
	return parsed
}

func TestPasskeyForSignInAndDecideAnswersAsABrowserWould(t *testing.T) {
	a := registered(t)
	for want := uint32(1); want <= 3; want++ {
		ad := assert(t, a, []byte(fmt.Sprintf("challenge number %d......", want))).Response.AuthenticatorData
		rpHash := sha256.Sum256([]byte("localhost"))
		if ad.Counter != want || !ad.Flags.UserPresent() || !ad.Flags.UserVerified() || !bytes.Equal(ad.RPIDHash, rpHash[:]) {
			t.Fatalf("assertion %d: counter %d, flags %08b", want, ad.Counter, ad.Flags)
		}
	}
}

func TestPasskeyForSignInAndDecideMisbehavesWhenTold(t *testing.T) {
	challenge := bytes.Repeat([]byte{9}, 32)
	t.Run("no user verification", func(t *testing.T) {
		a := registered(t)
		a.Misbehave.NoUserVerification = true
		if ad := assert(t, a, challenge).Response.AuthenticatorData; ad.Flags.UserVerified() || !ad.Flags.UserPresent() {
			t.Fatalf("flags %08b: want UP without UV", ad.Flags)
		}
	})
	t.Run("another origin", func(t *testing.T) {
		a := registered(t)
		a.Misbehave.Origin = "https://evil.example"
		if o := assert(t, a, challenge).Response.CollectedClientData.Origin; o != "https://evil.example" {
			t.Fatalf("origin %q", o)
		}
	})
	t.Run("another RP ID", func(t *testing.T) {
		a := registered(t)
		a.Misbehave.RPID = "evil.example"
		want := sha256.Sum256([]byte("evil.example"))
		if h := assert(t, a, challenge).Response.AuthenticatorData.RPIDHash; !bytes.Equal(h, want[:]) {
			t.Fatalf("rpIdHash %x, want that of evil.example", h)
		}
	})
	t.Run("a counter that does not grow", func(t *testing.T) {
		a := registered(t)
		first := assert(t, a, challenge).Response.AuthenticatorData.Counter
		a.Misbehave.FrozenCounter = true
		if second := assert(t, a, challenge).Response.AuthenticatorData.Counter; second != first {
			t.Fatalf("counter went %d → %d", first, second)
		}
	})
}

func TestPasskeyForSignInAndDecideRefusesWhatABrowserRefuses(t *testing.T) {
	a := registered(t)
	challenge := bytes.Repeat([]byte{1}, 32)
	if _, err := a.Register(page, creationOptions(challenge, a.CredentialID)); err == nil {
		t.Fatalf("registered again despite excludeCredentials")
	}
	if _, err := a.Assert(page, requestOptions(challenge, "example.com")); err == nil {
		t.Fatalf("signed for an RP ID it has no passkey for")
	}
	if _, err := a.Assert(page, requestOptions(challenge, "localhost", []byte("another credential"))); err == nil {
		t.Fatalf("signed though allowCredentials does not list it")
	}
	if _, err := apptest.NewAuthenticator().Assert(page, requestOptions(challenge, "localhost")); err == nil {
		t.Fatalf("an unregistered passkey signed")
	}
	if _, err := apptest.NewAuthenticator().Register("http://example.com", creationOptions(challenge)); err == nil {
		t.Fatalf("registered for RP ID localhost from example.com")
	}
}
