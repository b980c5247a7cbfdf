package main

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/push"
)

func TestVapidPrintsTheStoredPublicKey(t *testing.T) {
	env := map[string]string{"COUNTERSIGN_DATA": t.TempDir()}
	first := strings.TrimSpace(mustCLI(t, env, "vapid", "--init").stdout)
	raw, err := base64.RawURLEncoding.DecodeString(first)
	if err != nil || len(raw) != 65 || raw[0] != 4 {
		t.Fatalf("vapid printed %q, want an uncompressed P-256 point in base64url", first)
	}
	if again := strings.TrimSpace(mustCLI(t, env, "vapid").stdout); again != first {
		t.Errorf("a second run printed %q, want the same key %q", again, first)
	}
	store, err := app.OpenStore(context.Background(), mustConfig(t, env), apptest.Logger())
	if err != nil {
		t.Fatal(err)
	}
	keys, err := push.LoadKeys(context.Background(), store)
	if err != nil || keys.Public != first {
		t.Errorf("the service's key is %q (%v), want what vapid printed", keys.Public, err)
	}
}
