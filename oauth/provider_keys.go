package oauth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/countersign/countersign/models/oidc"
)

// The OpenID provider signs its ID tokens with ES256 keys of its own, made
// at first need and kept in the store (models/oidc); the public halves are
// published at JWKSPath, a retired key for the overlap its rotation gave.

// makeSigningKey makes a P-256 key: its key id is its RFC 7638 thumbprint
// (SHA-256, base64url), its private JWK the JSON the store keeps.
func makeSigningKey() (kid, privateJWK string, err error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", fmt.Errorf("make signing key: %w", err)
	}
	jwk := jose.JSONWebKey{Key: priv, Algorithm: string(jose.ES256), Use: "sig"}
	thumb, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		return "", "", fmt.Errorf("make signing key: %w", err)
	}
	jwk.KeyID = base64.RawURLEncoding.EncodeToString(thumb)
	raw, err := json.Marshal(jwk)
	if err != nil {
		return "", "", fmt.Errorf("make signing key: %w", err)
	}
	return jwk.KeyID, string(raw), nil
}

// parseSigningKey reads a key the store keeps.
func parseSigningKey(k oidc.SigningKey) (*jose.JSONWebKey, error) {
	var jwk jose.JSONWebKey
	if err := json.Unmarshal([]byte(k.PrivateJWK), &jwk); err != nil {
		return nil, fmt.Errorf("signing key %s: %w", k.Kid, err)
	}
	if jwk.KeyID != k.Kid || jwk.IsPublic() {
		return nil, fmt.Errorf("signing key %s: its JWK is not the private key of that kid", k.Kid)
	}
	return &jwk, nil
}

// SignJWT signs claims with the provider's current key: a compact JWS whose
// header names alg ES256, the key's kid and typ JWT.
func (s *Server) SignJWT(ctx context.Context, claims map[string]any) (string, error) {
	k, err := s.store.CurrentSigningKey(ctx)
	if err != nil {
		return "", fmt.Errorf("sign jwt: %w", err)
	}
	jwk, err := parseSigningKey(*k)
	if err != nil {
		return "", fmt.Errorf("sign jwt: %w", err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jwk}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return "", fmt.Errorf("sign jwt: %w", err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("sign jwt: %w", err)
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		return "", fmt.Errorf("sign jwt: %w", err)
	}
	return jws.CompactSerialize()
}

// JWKS is the provider's JWK Set as published: the public halves of the
// current key (made now if there is none) and of the retired keys still
// published.
func (s *Server) JWKS(ctx context.Context) (*jose.JSONWebKeySet, error) {
	if _, err := s.store.CurrentSigningKey(ctx); err != nil {
		return nil, fmt.Errorf("jwks: %w", err)
	}
	keys, err := s.store.PublishedSigningKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("jwks: %w", err)
	}
	set := &jose.JSONWebKeySet{Keys: []jose.JSONWebKey{}}
	for _, k := range keys {
		jwk, err := parseSigningKey(k)
		if err != nil {
			return nil, fmt.Errorf("jwks: %w", err)
		}
		set.Keys = append(set.Keys, jwk.Public())
	}
	return set, nil
}

// RotateSigningKey makes a new signing key current; the one it replaces is
// still published for overlap, so that the tokens it signed keep verifying.
func (s *Server) RotateSigningKey(ctx context.Context, overlap time.Duration) (string, error) {
	kid, jwk, err := makeSigningKey()
	if err != nil {
		return "", err
	}
	if err := s.store.RotateSigningKey(ctx, kid, jwk, overlap); err != nil {
		return "", err
	}
	return kid, nil
}
