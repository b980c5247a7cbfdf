package oauth

import (
	"context"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/go-jose/go-jose/v4"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/oidc"
)

// CIBASecretPrefix starts every CIBA client secret, so a leaked one is easy
// to spot.
const CIBASecretPrefix = "cs_ciba_"

// maxJWKSBytes bounds a registered JWK Set.
const maxJWKSBytes = 64 << 10

// CIBAClientRegistration is an admin's registration of a CIBA client, from
// the Admin → CIBA clients page or `countersign ciba-client add`.
type CIBAClientRegistration struct {
	AccountID            string
	Name                 string
	AuthMethod           string // oidc.AuthPrivateKeyJWT or oidc.AuthClientSecretBasic
	JWKS                 string // private_key_jwt: the client's public keys
	DeliveryMode         string // oidc.DeliveryPoll or oidc.DeliveryPing
	NotificationEndpoint string // ping only
	PersonIDs            []string
	CreatedBy            string // the admin's subject
}

// RegisterCIBAClient checks a registration and keeps the client with its
// agent and people. A client_secret_basic client gets a secret, returned
// this once: only its SHA-256 is kept. Each refusal is INVALID_ARGUMENT (or
// NOT_FOUND for a person) about the field that cannot work.
func (s *Server) RegisterCIBAClient(ctx context.Context, in CIBAClientRegistration) (*oidc.Client, string, error) {
	reg := models.RegisterCIBAClient{AccountID: in.AccountID, Name: strings.TrimSpace(in.Name), AuthMethod: in.AuthMethod,
		DeliveryMode: in.DeliveryMode, PersonIDs: in.PersonIDs, CreatedBy: in.CreatedBy}
	if reg.Name == "" || core.RuneCount(reg.Name) > 100 {
		return nil, "", core.Invalid("name", "name the client in 1 to 100 characters")
	}
	var secret string
	switch in.AuthMethod {
	case oidc.AuthPrivateKeyJWT:
		jwks, err := CheckClientJWKS(in.JWKS)
		if err != nil {
			return nil, "", err
		}
		reg.JWKS = jwks
	case oidc.AuthClientSecretBasic:
		if strings.TrimSpace(in.JWKS) != "" {
			return nil, "", core.Invalid("jwks", "a client_secret_basic client has no JWK Set: leave it empty, or choose private_key_jwt")
		}
		secret = core.RandomToken(CIBASecretPrefix)
		reg.SecretSHA256 = core.HashToken(secret)
	default:
		return nil, "", core.Invalid("method", "must be %s or %s, not %q", oidc.AuthPrivateKeyJWT, oidc.AuthClientSecretBasic, in.AuthMethod)
	}
	switch in.DeliveryMode {
	case oidc.DeliveryPing:
		if err := s.CheckNotificationEndpoint(in.NotificationEndpoint); err != nil {
			return nil, "", err
		}
		reg.NotificationEndpoint = strings.TrimSpace(in.NotificationEndpoint)
	case oidc.DeliveryPoll:
		if strings.TrimSpace(in.NotificationEndpoint) != "" {
			return nil, "", core.Invalid("notification_endpoint", "a poll client has no notification endpoint: leave it empty, or choose ping")
		}
	default:
		return nil, "", core.Invalid("mode", "must be %s or %s (push mode is not offered), not %q", oidc.DeliveryPoll, oidc.DeliveryPing, in.DeliveryMode)
	}
	c, err := s.store.RegisterCIBAClient(ctx, reg)
	if err != nil {
		return nil, "", err
	}
	return c, secret, nil
}

// CheckClientJWKS checks a client's JWK Set: JSON that parses, at most 64
// KiB, with at least one public signing key of a type its assertions may be
// signed with (EC, RSA of 2048 bits or more, Ed25519) and no private or
// symmetric key material. It returns the set as it is kept.
func CheckClientJWKS(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", core.Invalid("jwks", "a private_key_jwt client needs its JWK Set (its public keys)")
	}
	if len(raw) > maxJWKSBytes {
		return "", core.Invalid("jwks", "the JWK Set is over %d KiB", maxJWKSBytes>>10)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal([]byte(raw), &set); err != nil {
		return "", core.Invalid("jwks", "is not a JWK Set of keys go-jose reads: %s", strings.TrimPrefix(err.Error(), "go-jose/go-jose: "))
	}
	if len(set.Keys) == 0 {
		return "", core.Invalid("jwks", "the JWK Set holds no key (it needs {\"keys\": [...]})")
	}
	signing := 0
	for i, k := range set.Keys {
		name := fmt.Sprintf("key %d", i+1)
		if k.KeyID != "" {
			name = fmt.Sprintf("key %q", k.KeyID)
		}
		if _, symmetric := k.Key.([]byte); symmetric {
			return "", core.Invalid("jwks", "%s is a symmetric key: register public keys only", name)
		}
		if !k.IsPublic() {
			return "", core.Invalid("jwks", "%s holds private key material: register the public key only, and keep the private one with the client", name)
		}
		if !k.Valid() {
			return "", core.Invalid("jwks", "%s is not a valid key", name)
		}
		if rk, ok := k.Key.(*rsa.PublicKey); ok && rk.N.BitLen() < 2048 {
			return "", core.Invalid("jwks", "%s is an RSA key of %d bits: 2048 at least", name, rk.N.BitLen())
		}
		if k.Algorithm != "" && !slices.Contains(algNames(clientAssertionAlgs), k.Algorithm) {
			return "", core.Invalid("jwks", "%s is for %s: the algorithms accepted are %s", name, k.Algorithm, strings.Join(algNames(clientAssertionAlgs), ", "))
		}
		if k.Use == "" || k.Use == "sig" {
			signing++
		}
	}
	if signing == 0 {
		return "", core.Invalid("jwks", "the JWK Set holds no signing key (use \"sig\" or none)")
	}
	kept, err := json.Marshal(set)
	if err != nil {
		return "", fmt.Errorf("keep jwks: %w", err)
	}
	return string(kept), nil
}

// CheckNotificationEndpoint checks a ping client's notification endpoint:
// an absolute https URL without user or fragment; http only to a loopback
// host or a host NotificationPrivateHosts allows.
func (s *Server) CheckNotificationEndpoint(raw string) error {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return core.Invalid("notification_endpoint", "a ping client needs its notification endpoint")
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.User != nil || u.Fragment != "" {
		return core.Invalid("notification_endpoint", "must be an absolute URL without a user or a fragment")
	}
	host := strings.ToLower(u.Hostname())
	ip := net.ParseIP(host)
	allowed := host == "localhost" || (ip != nil && ip.IsLoopback()) ||
		slices.Contains(s.NotificationPrivateHosts, u.Host) || slices.Contains(s.NotificationPrivateHosts, host)
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && allowed:
	default:
		return core.Invalid("notification_endpoint", "must be https (http only to a loopback host or one COUNTERSIGN_CHANNEL_PRIVATE_HOSTS allows)")
	}
	if ip != nil && !allowed && (ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsUnspecified() || ip.IsMulticast()) {
		return core.Invalid("notification_endpoint", "%s is a private address: allow it with COUNTERSIGN_CHANNEL_PRIVATE_HOSTS", host)
	}
	return nil
}
