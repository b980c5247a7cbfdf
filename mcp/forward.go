package mcp

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/grants"
	"github.com/countersign/countersign/models/ops"
	"github.com/countersign/countersign/models/runners"
)

// Several instances behind one address, with no affinity: a 2025-11-25
// session lives in the memory of the instance that opened it, and any
// instance may get its next call. Each instance makes its session ids with
// its own id in front (instanceID + "-" + random) and records its internal
// address in the database (models.RegisterInstance); an instance that gets
// a call on another's session forwards it there, streams included, and the
// owner checks it as any call. A forwarded call is never forwarded again.
//
// A forwarded call carries no bearer token: the address it goes to is read
// from the database, and whoever can write there must not be able to
// collect the agents' tokens by pointing an instance's address at a
// listener of their own. The forwarding instance drops the Authorization
// header and names the caller's credential by its kind and its SHA-256
// (what the database keeps, never the token), and signs the call with a
// key only the instances hold, derived from COUNTERSIGN_INSTANCE_SECRET
// (configuration, not the database): HMAC-SHA256 over the sender, the time,
// the method, the path, the session, the credential and the body's
// SHA-256. The owner accepts a forwarded call only with a signature that
// holds, made within forwardSkew, and authenticates the credential it names
// as it would the token itself.
//
// This is simpler and more robust than sessions resumed from the database:
// a session's standing stream is a connection to the instance that holds
// it, and its subscriptions must be where that stream is; a forwarded call
// costs one loopback-speed hop. When the owner is gone the session is gone with
// it: the call is answered 404, as the SDK answers an unknown session, and
// the client opens a new one.

// Instance is how this instance takes part in forwarding: its id, and how
// it finds another's internal address.
type Instance struct {
	// ID prefixes the session ids this instance makes; empty: no forwarding.
	ID string
	// Address finds the internal base URL of the running instance id
	// (models.ErrNoInstance when none runs).
	Address func(ctx context.Context, id string) (string, error)
	// Secret is COUNTERSIGN_INSTANCE_SECRET, the same on every instance:
	// forwarded calls are signed with a key derived from it. Empty: this
	// instance neither forwards nor accepts forwarded calls.
	Secret string
}

// NewInstanceID makes a random instance id.
func NewInstanceID() string { return strings.ToLower(rand.Text()[:10]) }

// The headers of a forwarded call: the sending instance (which also marks
// the call as forwarded, never to be forwarded again), when it was signed,
// the caller's credential, and the signature.
const (
	forwardedHeader                = "X-Countersign-Forwarded"
	forwardedAtHeader              = "X-Countersign-Forwarded-At"
	forwardedPrincipalHeader       = "X-Countersign-Forwarded-Principal"
	forwardedSignatureHeader       = "X-Countersign-Forwarded-Signature"
	forwardSkew                    = 30 * time.Second // how old (or early) a forwarded call may be
	forwardKeyInfo                 = "countersign instance forwarding v1"
	forwardBodyMax           int64 = 1 << 20 // the MCP endpoint's own bound (Options.MaxBodyBytes)
)

// credential is a caller's bearer token as the database knows it: its kind
// (from its prefix) and its hash. A forwarded call names it so; a direct
// call carries the token, which is read into one.
type credential struct {
	kind string // credentialAgent, credentialOAuth or credentialRunner
	hash string
}

const (
	credentialAgent  = "agent"
	credentialOAuth  = "oauth"
	credentialRunner = "runner"
)

// credentialOfToken reads a bearer token into its credential.
func credentialOfToken(token string) credential {
	kind := credentialAgent
	switch {
	case runners.IsRunnerToken(token):
		kind = credentialRunner
	case strings.HasPrefix(token, grants.OAuthAccessPrefix):
		kind = credentialOAuth
	}
	return credential{kind: kind, hash: core.HashToken(token)}
}

func (c credential) String() string { return c.kind + ":" + c.hash }

// parseCredential reads a credential as a forwarded call names it; ok is
// false for anything else (the caller sent no token: "").
func parseCredential(v string) (credential, bool) {
	kind, hash, _ := strings.Cut(v, ":")
	if (kind != credentialAgent && kind != credentialOAuth && kind != credentialRunner) || len(hash) != sha256.Size*2 {
		return credential{}, false
	}
	if _, err := hex.DecodeString(hash); err != nil {
		return credential{}, false
	}
	return credential{kind: kind, hash: hash}, true
}

type forwardedKey struct{}

// forwardedCredential is the credential a verified forwarded call names,
// with ok true when r is such a call (its credential may be empty: the
// caller sent no token).
func forwardedCredential(r *http.Request) (credential, bool) {
	c, ok := r.Context().Value(forwardedKey{}).(credential)
	return c, ok
}

// ownerOf is the instance id in front of a session id.
func ownerOf(sessionID string) (string, bool) {
	owner, _, ok := strings.Cut(sessionID, "-")
	return owner, ok && owner != ""
}

// forwarder sends calls on other instances' sessions to them, and accepts
// the calls other instances forward.
type forwarder struct {
	self      Instance
	key       []byte // the HMAC key of forwarded calls; nil without a secret
	maxBody   int64  // Options.MaxBodyBytes: a body is read whole, to be signed
	transport http.RoundTripper
	log       *slog.Logger
}

func newForwarder(self Instance, maxBody int64, log *slog.Logger) *forwarder {
	f := &forwarder{self: self, maxBody: maxBody, log: log, transport: &http.Transport{
		Proxy:                 nil,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: 0, // a call may wait for a person; a stream waits as long as it lasts
	}}
	if self.Secret != "" {
		mac := hmac.New(sha256.New, []byte(self.Secret))
		mac.Write([]byte(forwardKeyInfo))
		f.key = mac.Sum(nil)
	}
	return f
}

// signature is the HMAC of a forwarded call: who sent it and when, what it
// asks (method, path, session), for whom, and its body's SHA-256.
func (f *forwarder) signature(sender, at string, r *http.Request, principal string, body []byte) string {
	sum := sha256.Sum256(body)
	mac := hmac.New(sha256.New, f.key)
	for _, part := range []string{sender, at, r.Method, r.URL.RequestURI(), r.Header.Get(sessionHeader), principal, hex.EncodeToString(sum[:])} {
		mac.Write([]byte(part))
		mac.Write([]byte{0})
	}
	return hex.EncodeToString(mac.Sum(nil))
}

// handler forwards a request on another instance's session to it, accepts
// a request another instance forwarded once its signature holds, and
// serves any other with next.
func (f *forwarder) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sender := r.Header.Get(forwardedHeader); sender != "" {
			f.accept(w, r, sender, next)
			return
		}
		owner, ok := ownerOf(r.Header.Get(sessionHeader))
		if f.self.ID == "" || !ok || owner == f.self.ID {
			next.ServeHTTP(w, r)
			return
		}
		f.forward(w, r, owner)
	})
}

// accept serves a forwarded call with next, as the caller it names, once
// its signature holds; any other is refused with 403.
func (f *forwarder) accept(w http.ResponseWriter, r *http.Request, sender string, next http.Handler) {
	refuse := func(why string) {
		f.log.Warn("a forwarded MCP call was refused", "from", sender, "why", why)
		writeRPCError(w, http.StatusForbidden, nil, codeInvalidRequest, "Forbidden: a forwarded call whose signature does not hold: "+why)
	}
	if f.key == nil {
		refuse("this instance takes no forwarded calls (no COUNTERSIGN_INSTANCE_SECRET)")
		return
	}
	at := r.Header.Get(forwardedAtHeader)
	sec, err := strconv.ParseInt(at, 10, 64)
	if err != nil {
		refuse("no time of signing")
		return
	}
	if d := time.Since(time.Unix(sec, 0)); d > forwardSkew || d < -forwardSkew {
		refuse("signed too long ago, or in the future")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, f.maxBody))
	if err != nil {
		refuse("the body could not be read: " + err.Error())
		return
	}
	principal := r.Header.Get(forwardedPrincipalHeader)
	got, _ := hex.DecodeString(r.Header.Get(forwardedSignatureHeader))
	want, _ := hex.DecodeString(f.signature(sender, at, r, principal, body))
	if !hmac.Equal(got, want) {
		refuse("the signature is not the instances' own")
		return
	}
	cred, ok := parseCredential(principal)
	if !ok && principal != "" {
		refuse("the credential it names is not one")
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), forwardedKey{}, cred)))
}

// forward sends r to the instance owner, which holds its session: signed,
// with the caller's credential named by its hash and no token.
func (f *forwarder) forward(w http.ResponseWriter, r *http.Request, owner string) {
	address, err := f.self.Address(r.Context(), owner)
	if errors.Is(err, ops.ErrNoInstance) {
		writeRPCError(w, http.StatusNotFound, nil, codeInvalidRequest,
			"session not found: the instance that held it is gone; open a new session with initialize")
		return
	}
	if err != nil {
		f.log.Warn("find the instance that holds an MCP session", "instance", owner, "err", err)
		writeRPCError(w, http.StatusServiceUnavailable, nil, codeInvalidRequest, "the database is unavailable for a moment; retry in a few seconds")
		return
	}
	target, err := url.Parse(address)
	if err != nil {
		f.log.Error("an instance's address is not a URL", "instance", owner, "address", address, "err", err)
		writeRPCError(w, http.StatusBadGateway, nil, codeInvalidRequest, "the instance that holds this session cannot be reached")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, f.maxBody))
	if err != nil {
		writeRPCError(w, http.StatusRequestEntityTooLarge, nil, codeInvalidRequest, fmt.Sprintf("the request body is over %d bytes", f.maxBody))
		return
	}
	principal := ""
	if token, ok := bearerToken(r); ok {
		principal = credentialOfToken(token).String()
	}
	at := strconv.FormatInt(time.Now().Unix(), 10)
	signature := f.signature(f.self.ID, at, r, principal, body)
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.SetXForwarded()
			pr.Out.Host = pr.In.Host // the public Host, which the owner's rebinding check allows
			pr.Out.Header.Del("Authorization")
			pr.Out.Header.Del("Cookie")
			pr.Out.Header.Set(forwardedHeader, f.self.ID)
			pr.Out.Header.Set(forwardedAtHeader, at)
			pr.Out.Header.Set(forwardedPrincipalHeader, principal)
			pr.Out.Header.Set(forwardedSignatureHeader, signature)
			pr.Out.Body, pr.Out.ContentLength = http.NoBody, 0
			if len(body) > 0 {
				pr.Out.Body, pr.Out.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
			}
		},
		Transport:     f.transport,
		FlushInterval: -1, // event streams: every write at once
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return // the client left
			}
			// The owner is gone (killed, or shutting down): so is the session.
			f.log.Info("the instance that holds an MCP session cannot be reached", "instance", owner, "err", err)
			writeRPCError(w, http.StatusNotFound, nil, codeInvalidRequest,
				"session not found: the instance that held it is gone; open a new session with initialize")
		},
	}
	proxy.ServeHTTP(w, r)
}
