package main

import (
	"context"
	"strings"
	"testing"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
)

// `agent create --for SUBJECT` makes an agent that acts for a member of the
// account: the list names that person, and a subject that is no member is
// refused with nothing made.
func TestAnAgentMadeForAPersonNamesThem(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	env := map[string]string{"COUNTERSIGN_DATA": data}
	mustCLI(t, env, "account", "list", "--init")
	store, err := app.OpenStore(ctx, mustConfig(t, env), apptest.Logger())
	if err != nil {
		t.Fatal(err)
	}
	acct, err := store.AccountByName(ctx, people.DefaultAccountName)
	if err != nil {
		t.Fatal(err)
	}
	ada, err := store.AddMember(ctx, acct.ID, "ada", "Ada", core.RoleMember)
	if err != nil {
		t.Fatal(err)
	}
	if sqlDB, err := store.DB().DB(); err == nil {
		sqlDB.Close()
	}

	made := mustCLI(t, env, "agent", "create", "--name", "adas-bot", "--scopes", "mcp:read", "--for", "ada")
	if !strings.Contains(made.stdout, "it acts for ada") {
		t.Fatalf("agent create --for ada said:\n%s", made.stdout)
	}
	r := cli(t, env, "agent", "create", "--name", "ghost-bot", "--scopes", "mcp:read", "--for", "nobody")
	if r.code != 1 || !strings.Contains(r.stderr, `no person "nobody" is a member of this account`) {
		t.Fatalf("agent create --for nobody: %s\nwant exit 1 naming the unknown person", r)
	}
	list := mustCLI(t, env, "agent", "list").stdout
	if strings.Contains(list, "ghost-bot") {
		t.Fatalf("a refused agent was made:\n%s", list)
	}
	var row string
	for _, line := range strings.Split(list, "\n") {
		if strings.HasPrefix(line, "adas-bot ") {
			row = line
		}
	}
	if fields := strings.Fields(row); len(fields) < 3 || fields[2] != "ada" {
		t.Fatalf("agent list row %q: want FOR ada\n%s", row, list)
	}

	store, err = app.OpenStore(ctx, mustConfig(t, env), apptest.Logger())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if sqlDB, err := store.DB().DB(); err == nil {
			sqlDB.Close()
		}
	}()
	agent, err := store.AgentByName(ctx, acct.ID, "adas-bot")
	if err != nil {
		t.Fatal(err)
	}
	if agent.ForPersonID == nil || *agent.ForPersonID != ada.ID {
		t.Fatalf("the agent acts for %v, want ada's person id %s", agent.ForPersonID, ada.ID)
	}
}
