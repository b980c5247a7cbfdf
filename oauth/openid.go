package oauth

import (
	"context"

	"github.com/go-jose/go-jose/v4"

	"github.com/countersign/countersign/ask"
	"github.com/countersign/countersign/models/oidc"
)

// The paths the OpenID provider serves under the issuer: its discovery
// document (OpenID Connect Discovery 1.0) and its JWK Set.
const (
	OpenIDConfigurationPath = "/.well-known/openid-configuration"
	JWKSPath                = "/oauth/jwks.json"
)

// CIBAGrantType is the token endpoint's grant of CIBA Core 1.0 §10.1.
const CIBAGrantType = "urn:openid:params:grant-type:ciba"

// clientAssertionAlgs are the algorithms a CIBA client may sign its client
// assertions and signed authentication requests with: the asymmetric ones
// go-jose verifies and FAPI-CIBA or common clients use. No HMAC: only the
// hash of a client's secret is kept.
var clientAssertionAlgs = []jose.SignatureAlgorithm{jose.ES256, jose.PS256, jose.RS256, jose.EdDSA}

func algNames(algs []jose.SignatureAlgorithm) []string {
	out := make([]string, len(algs))
	for i, a := range algs {
		out[i] = string(a)
	}
	return out
}

// OpenIDConfiguration is the OpenID Provider metadata served at
// OpenIDConfigurationPath: the CIBA provider's endpoints and what it
// accepts. The authorization endpoint is left out: it serves MCP hosts and
// issues no ID token, so no OpenID client should start a code flow there.
func (s *Server) OpenIDConfiguration(ctx context.Context) map[string]any {
	return map[string]any{
		"issuer":                              s.issuer,
		"token_endpoint":                      s.issuer + TokenPath,
		"jwks_uri":                            s.issuer + JWKSPath,
		"backchannel_authentication_endpoint": s.issuer + BackchannelPath,
		"backchannel_token_delivery_modes_supported":                      []string{oidc.DeliveryPoll, oidc.DeliveryPing},
		"backchannel_authentication_request_signing_alg_values_supported": algNames(clientAssertionAlgs),
		"backchannel_user_code_parameter_supported":                       false,
		"grant_types_supported":                                           []string{"authorization_code", "refresh_token", CIBAGrantType},
		// "none" is the MCP hosts' (public clients of the code grant); CIBA
		// clients are confidential.
		"token_endpoint_auth_methods_supported":            []string{oidc.AuthPrivateKeyJWT, oidc.AuthClientSecretBasic, "none"},
		"token_endpoint_auth_signing_alg_values_supported": algNames(clientAssertionAlgs),
		"introspection_endpoint":                           s.issuer + IntrospectPath,
		"introspection_endpoint_auth_methods_supported":    []string{oidc.AuthPrivateKeyJWT, oidc.AuthClientSecretBasic},
		"authorization_details_types_supported":            ask.AuthorizationDetailTypes,
		"id_token_signing_alg_values_supported":            []string{string(jose.ES256)},
		"subject_types_supported":                          []string{"public"},
		"scopes_supported":                                 []string{"openid"},
		"response_types_supported":                         []string{"code"},
		"claims_supported": []string{"iss", "sub", "aud", "exp", "iat", "auth_time", "at_hash",
			"countersign_approval_id", "countersign_payload_sha256"},
	}
}
