// Package requestlog carries what the one log line of a request should say
// beyond its route and status: the MCP tool called and the agent calling it.
// The HTTP layer puts a Note in the request's context; the MCP endpoint,
// deeper in, fills it in.
package requestlog

import (
	"context"
	"sync"
)

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
