// Package requestlog carries what the one log line of a request should say
// beyond its route and status: the MCP tool called and the agent calling it.
// The HTTP layer puts a Note in the request's context; the MCP endpoint,
// deeper in, fills it in. Path gives the request's path as the line may hold
// it: with its one-time secrets hashed.
package requestlog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"sync"
)

// secretPrefixes begin the secrets a URL path may carry: invite links
// (inv_), device links (dln_), push links (pl_, pls_), device grants (dga_)
// and every bearer token of the service (cs_: agents, runners, OAuth codes
// and tokens).
var secretPrefixes = []string{"inv_", "dln_", "pl_", "pls_", "dga_", "cs_"}

// Path is a URL path as a log line may hold it: each segment that is one of
// secrets (the values of the route's token parameters) or begins like a
// secret of the service is replaced by "sha256:" and the first 8 hex
// characters of its SHA-256. Whoever holds a link can find its lines;
// whoever reads the log cannot use the link. Unmatched routes (a 404 under
// /invite/) are covered by the prefixes.
func Path(path string, secrets ...string) string {
	segments := strings.Split(path, "/")
	for i, seg := range segments {
		if seg != "" && (slices.Contains(secrets, seg) || slices.ContainsFunc(secretPrefixes, func(p string) bool { return strings.HasPrefix(seg, p) })) {
			segments[i] = hashed(seg)
		}
	}
	return strings.Join(segments, "/")
}

// hashed is how a log line names a secret: "sha256:" and the first 8 hex
// characters of its SHA-256.
func hashed(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return "sha256:" + hex.EncodeToString(sum[:4])
}

// Note is what a request's handlers learnt about it, for its log line.
type Note struct {
	mu          sync.Mutex
	tool, agent string
}

type noteKey struct{}

// With returns ctx carrying a new, empty Note.
func With(ctx context.Context) (context.Context, *Note) {
	n := &Note{}
	return context.WithValue(ctx, noteKey{}, n), n
}

// From returns the Note of ctx, or nil; a nil Note takes and gives nothing.
func From(ctx context.Context) *Note {
	n, _ := ctx.Value(noteKey{}).(*Note)
	return n
}

// SetTool records the MCP tool the request calls.
func (n *Note) SetTool(tool string) {
	if n != nil {
		n.mu.Lock()
		n.tool = tool
		n.mu.Unlock()
	}
}

// SetAgent records the agent the request was authenticated as.
func (n *Note) SetAgent(agent string) {
	if n != nil {
		n.mu.Lock()
		n.agent = agent
		n.mu.Unlock()
	}
}

// Fields returns the tool and the agent, "" where unknown.
func (n *Note) Fields() (tool, agent string) {
	if n == nil {
		return "", ""
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.tool, n.agent
}
