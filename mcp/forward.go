package mcp

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/countersign/countersign/models"
)

// Several instances behind one address, with no affinity: a 2025-11-25
// session lives in the memory of the instance that opened it, and any
// instance may get its next call. Each instance makes its session ids with
// its own id in front (instanceID + "-" + random) and records its internal
// address in the database (models.RegisterInstance); an instance that gets
// a call on another's session forwards it there, streams included, and the
// owner checks it as any call. The forwarding instance adds nothing but the
// X-Countersign-Forwarded header, which stops a second hop.
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
}

// NewInstanceID makes a random instance id.
func NewInstanceID() string { return strings.ToLower(rand.Text()[:10]) }

// forwardedHeader marks a forwarded call, which is never forwarded again.
const forwardedHeader = "X-Countersign-Forwarded"

// ownerOf is the instance id in front of a session id.
func ownerOf(sessionID string) (string, bool) {
	owner, _, ok := strings.Cut(sessionID, "-")
	return owner, ok && owner != ""
}

// forwarder sends calls on other instances' sessions to them.
type forwarder struct {
	self      Instance
	transport http.RoundTripper
	log       *slog.Logger
}

func newForwarder(self Instance, log *slog.Logger) *forwarder {
	return &forwarder{self: self, log: log, transport: &http.Transport{
		Proxy:                 nil,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: 0, // a call may wait for a person; a stream waits as long as it lasts
	}}
}

// handler forwards a request on another instance's session to it, and
// serves any other with next.
func (f *forwarder) handler(next http.Handler) http.Handler {
	if f.self.ID == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		owner, ok := ownerOf(r.Header.Get("Mcp-Session-Id"))
		if !ok || owner == f.self.ID || r.Header.Get(forwardedHeader) != "" {
			next.ServeHTTP(w, r)
			return
		}
		address, err := f.self.Address(r.Context(), owner)
		if errors.Is(err, models.ErrNoInstance) {
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
		proxy := &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(target)
				pr.SetXForwarded()
				pr.Out.Host = pr.In.Host // the public Host, which the owner's rebinding check allows
				pr.Out.Header.Set(forwardedHeader, f.self.ID)
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
	})
}
