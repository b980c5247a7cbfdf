package models

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/countersign/countersign/ask"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"gorm.io/gorm"
)

// A test ask lets a new person feel the whole flow before any MCP host is
// wired up: the push, the answer, the receipt and the proof. It is a
// decision ask (nothing runs whichever option is picked) filed by the
// service's own agent (serviceAgent: marked, never found by a name anyone
// could take) through CreateApproval, the path every ask takes, and asked
// of the person who sent it.

// TestAskTitle is the title of every test ask: it says it is a test.
const TestAskTitle = "Test ask: does Countersign reach you?"

// testAskOptions are a test ask's answers; either approves it.
var testAskOptions = []string{"Yes, it reached me", "Something looked wrong"}

// SendTestAsk files a test ask of the person m from the service's agent, or returns the one already open for them: a second tap files no
// second ask.
func (s *Store) SendTestAsk(ctx context.Context, m *people.Member) (*asks.Approval, error) {
	agent, err := s.serviceAgent(ctx, m.AccountID)
	if err != nil {
		return nil, err
	}
	if agent.Disabled {
		return nil, core.Refuse(core.FailedPrecondition, "", "the service's agent %s is disabled (%s): it files no test asks until an admin enables it again", agent.Name, agent.DisabledReason)
	}
	var open asks.Approval
	err = s.DB().WithContext(ctx).Table("approvals").
		Where("account_id = ? AND requester_id = ? AND asked_of = ? AND "+asks.OpenAsks+" AND expires_at > ?", m.AccountID, agent.ID, m.Subject, s.Now()).
		Order("seq DESC").Take(&open).Error
	if err == nil {
		return &open, nil
	}
	if !errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, fmt.Errorf("read open test ask: %w", err)
	}
	payload, err := json.Marshal(map[string]any{"decision": map[string]any{"options": testAskOptions}})
	if err != nil {
		return nil, fmt.Errorf("test ask payload: %w", err)
	}
	actx, err := json.Marshal(map[string]string{"no_context_reason": "A test ask that " + m.Subject + " sent from the inbox: nothing runs whatever the answer."})
	if err != nil {
		return nil, fmt.Errorf("test ask context: %w", err)
	}
	return s.CreateApproval(ctx, NewAsk{
		Requester: agent, Kind: ask.KindDecision, Title: TestAskTitle,
		Summary:      "You sent yourself this ask to try Countersign: answer it with your passkey, then download the proof of your answer.",
		ApproveMeans: "Your signed answer is recorded; nothing else happens.",
		DenyMeans:    "Your signed denial is recorded; nothing else happens.",
		AgentLabel:   "Countersign test", AskedOf: m.Subject, Payload: payload, Context: actx,
	})
}
