package main

import (
	"context"
	"net/http"
	"testing"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/apptest/gatetest"
	"github.com/countersign/countersign/models"
)

// passkeyPerson is ada answering with apptest's software passkey, over the
// same HTTP calls her browser makes.
type passkeyPerson struct{ ada *apptest.Browser }

func (p passkeyPerson) Subject() string { return "ada" }

func (p passkeyPerson) Answer(t *testing.T, a models.Approval, answer string) {
	t.Helper()
	if answer == "" {
		return
	}
	if r := p.ada.For(t).Decide(a.ID, answer, ""); r.Status != http.StatusOK {
		t.Fatalf("ada answers %s: %s", answer, r)
	}
}

func (p passkeyPerson) ApproveLate(t *testing.T, a models.Approval) {
	t.Helper()
	if r := p.ada.For(t).Decide(a.ID, "approve", ""); r.Status == http.StatusOK {
		t.Errorf("ada approved a withdrawn ask: %s", r)
	}
}

// TestGateInFrontOfServerFilesystem runs countersign gate over stdio in
// front of the npm filesystem server, driven by a go-sdk client, with ada
// answering on the service with a software passkey (browsertest runs the
// same scenarios with her in Chromium).
func TestGateInFrontOfServerFilesystem(t *testing.T) {
	gatetest.FilesystemServer(t)
	env, ada := serviceWithAda(t)
	gatetest.RunFilesystemScenarios(t, gatetest.Setup{Env: env, Binary: binary, Person: passkeyPerson{ada}})
}

// serviceWithAda runs the service with ada, an owner, signed in with a
// software passkey.
func serviceWithAda(t *testing.T) (*apptest.Env, *apptest.Browser) {
	t.Helper()
	env := apptest.StartWeb(t, apptest.SQLite, nil)
	invite, _, err := env.Store.CreateInvite(context.Background(), models.NewInvite{AccountID: env.Account.ID, Role: models.RoleOwner, By: models.OperatorInviter("test")})
	if err != nil {
		t.Fatal(err)
	}
	ada := env.Browser()
	if r := ada.AcceptInvite(invite, "ada"); r.Status != http.StatusOK {
		t.Fatalf("ada accepts the invite: %s", r)
	}
	return env, ada
}
