package models

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"gorm.io/gorm"
)

// A test ask lets a new person feel the whole flow before any MCP host is
// wired up: the push, the answer, the receipt and the proof. It is a
// decision ask (nothing runs whichever option is picked) filed by the
// account's TestAskAgentName agent through CreateApproval, the path every
// ask takes, and asked of the person who sent it.

// TestAskAgentName is the agent that files the test asks people send
// themselves from the inbox, one per account, made on first use. It has no
// token anyone knows: it files nothing over MCP.
const TestAskAgentName = "countersign-test"

// TestAskTitle is the title of every test ask: it says it is a test.
const TestAskTitle = "Test ask: does Countersign reach you?"

// testAskOptions are a test ask's answers; either approves it.
var testAskOptions = []string{"Yes, it reached me", "Something looked wrong"}

// SendTestAsk files a test ask of the person m from the account's test
// agent, or returns the one already open for them: a second tap files no
// second ask.
func (s *Store) SendTestAsk(ctx context.Context, m *Member) (*Approval, error) {
	agent, err := s.serviceAgent(ctx, m.AccountID, TestAskAgentName)
	if err != nil {
		return nil, err
	}
	if agent.Disabled {
		return nil, Refuse(FailedPrecondition, "", "the test agent %s is disabled (%s): it files no test asks until an admin enables it again", agent.Name, agent.DisabledReason)
	}
	var open Approval
	err = s.db.WithContext(ctx).Table("approvals").
		Where("account_id = ? AND requester_id = ? AND asked_of = ? AND "+openAsks+" AND expires_at > ?", m.AccountID, agent.ID, m.Subject, s.now()).
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
		Requester: agent, Kind: KindDecision, Title: TestAskTitle,
		Summary:      "You sent yourself this ask to try Countersign: answer it with your passkey, then download the proof of your answer.",
		ApproveMeans: "Your signed answer is recorded; nothing else happens.",
		DenyMeans:    "Your signed denial is recorded; nothing else happens.",
		AgentLabel:   "Countersign test", AskedOf: m.Subject, Payload: payload, Context: actx,
	})
}

// serviceAgent finds or makes the account's agent named name, which the
// service itself files asks as. It holds a token nobody knows and may only
// read: its asks are filed from inside the service, never over MCP.
func (s *Store) serviceAgent(ctx context.Context, accountID, name string) (*Agent, error) {
	a, err := s.AgentByName(ctx, accountID, name)
	if err == nil {
		return a, nil
	}
	if CodeOf(err) != NotFound {
		return nil, err
	}
	a, _, err = s.CreateAgent(ctx, accountID, name, []string{ScopeApprovalsRead})
	if CodeOf(err) == FailedPrecondition { // made meanwhile by another call
		return s.AgentByName(ctx, accountID, name)
	}
	return a, err
}
