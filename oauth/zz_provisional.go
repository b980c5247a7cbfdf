package oauth

import (
	"context"
	"net/http"
	"net/url"

	"github.com/go-jose/go-jose/v4"

	"github.com/countersign/countersign/models/oidc"
)

func (s *Server) AuthenticateClient(ctx context.Context, header http.Header, form url.Values, endpoint string) (*oidc.Client, *Error) {
	panic("provisional")
}
func (s *Server) SignJWT(ctx context.Context, claims map[string]any) (string, error) {
	panic("provisional")
}
func (s *Server) JWKS(ctx context.Context) (*jose.JSONWebKeySet, error) { panic("provisional") }
func (s *Server) VerifyRequestObject(ctx context.Context, c *oidc.Client, request string) (map[string]any, *Error) {
	panic("provisional")
}
