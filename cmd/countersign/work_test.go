package main

import (
	"strings"
	"testing"
)

func TestWorkCommands(t *testing.T) {
	env := map[string]string{"COUNTERSIGN_DATA": t.TempDir()}
	mustCLI(t, env, "--init", "account", "create", "acme")
	mustCLI(t, env, "work", "column", "add", "--key", "doing", "--name", "Doing", "--account", "acme")
	mustCLI(t, env, "work", "column", "add", "--key", "done", "--name", "Done", "--account", "acme")
	added := mustCLI(t, env, "work", "item", "add", "--column", "doing", "--title", "Fix login", "--account", "acme")
	lines := strings.Split(strings.TrimSpace(added.stdout), "\n")
	id := lines[len(lines)-1]
	if !strings.HasPrefix(id, "item_") {
		t.Fatalf("the last line of item add is %q, want the new item's id\n%s", id, added)
	}
	list := mustCLI(t, env, "work", "list", "--account", "acme")
	if !strings.Contains(list.stdout, "doing\tDoing\n  "+id+"\tFix login\n") || !strings.Contains(list.stdout, "done\tDone") {
		t.Fatalf("work list:\n%s", list)
	}
	if other := mustCLI(t, env, "work", "list"); strings.Contains(other.stdout, id) {
		t.Fatalf("the default account's board shows acme's item:\n%s", other)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"work", "column", "remove", "doing", "--account", "acme"}, "FAILED_PRECONDITION"},
		{[]string{"work", "column", "add", "--key", "doing", "--name", "Again", "--account", "acme"}, "FAILED_PRECONDITION"},
		{[]string{"work", "column", "add", "--key", "Bad Key", "--name", "X", "--account", "acme"}, "INVALID_ARGUMENT: key"},
		{[]string{"work", "item", "add", "--column", "nope", "--title", "X", "--account", "acme"}, "NOT_FOUND: column"},
		{[]string{"work", "item", "remove", id}, "NOT_FOUND"},
		{[]string{"work", "frobnicate"}, "usage"},
	} {
		if r := cli(t, env, tc.args...); r.code == 0 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("countersign %s: want a refusal with %q\n%s", strings.Join(tc.args, " "), tc.want, r)
		}
	}
	mustCLI(t, env, "work", "item", "remove", id, "--account", "acme")
	mustCLI(t, env, "work", "column", "remove", "doing", "--account", "acme")
	if list := mustCLI(t, env, "work", "list", "--account", "acme"); strings.Contains(list.stdout, "doing") || strings.Contains(list.stdout, id) {
		t.Fatalf("after the removes:\n%s", list)
	}
}
