package handlers_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/runners"
)

func TestEnrollingARunnerOnTheRunnersPageShowsItsIdAndTokenOnce(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		f := newFixture(t, db)
		ctx := context.Background()
		pub, _, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		key := base64.RawURLEncoding.EncodeToString(pub)

		member := signIn(t, f.env, f.member)
		if res, _ := member.get("/admin/runners"); res.StatusCode != http.StatusForbidden {
			t.Errorf("GET /admin/runners as a member: %d", res.StatusCode)
		}
		if res, _ := member.post("/admin/runners", url.Values{"name": {"sneaky"}, "public_key": {key}}, true); res.StatusCode != http.StatusForbidden {
			t.Errorf("POST /admin/runners as a member: %d", res.StatusCode)
		}

		b := signIn(t, f.env, f.admin)
		res, body := b.post("/admin/runners", url.Values{"name": {"deploy-eu"}, "public_key": {key}}, true)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("enroll: %d\n%s", res.StatusCode, body)
		}
		page := parseHTML(t, body)
		ids, tokens := elements(page, byAttr("data-testid", "runner-id")), elements(page, byAttr("data-testid", "runner-token"))
		if len(ids) != 1 || len(tokens) != 1 {
			t.Fatalf("the page shows %d ids and %d tokens", len(ids), len(tokens))
		}
		r, err := f.env.Store.RunnerByName(ctx, f.env.Account.ID, "deploy-eu")
		if err != nil {
			t.Fatal(err)
		}
		token := textOf(tokens[0])
		if textOf(ids[0]) != r.ID || r.PublicKey != key || r.TokenHash != core.HashToken(token) || !strings.HasPrefix(token, runners.RunnerTokenPrefix+r.ID+".") {
			t.Errorf("shown id %q token %q; stored %+v", textOf(ids[0]), token, r)
		}
		_, again := b.get("/admin/runners")
		if strings.Contains(again, token) || !strings.Contains(again, key) || !strings.Contains(again, r.ID) {
			t.Errorf("the runners page shows the token again, or not the runner")
		}

		t.Run("a key that is not an Ed25519 key is refused on the page", func(t *testing.T) {
			res, body := b.post("/admin/runners", url.Values{"name": {"other"}, "public_key": {"ed25519:AAAA"}}, true)
			if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "base64url") {
				t.Errorf("a bad key: %d", res.StatusCode)
			}
			if _, err := f.env.Store.RunnerByName(ctx, f.env.Account.ID, "other"); core.CodeOf(err) != core.NotFound {
				t.Errorf("the runner was enrolled: %v", err)
			}
		})
		t.Run("disabling stops it", func(t *testing.T) {
			res, _ := b.post("/admin/runners/deploy-eu/disable", nil, true)
			if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/admin/runners" {
				t.Fatalf("disable: %d %s", res.StatusCode, res.Header.Get("Location"))
			}
			if r, err := f.env.Store.RunnerByName(ctx, f.env.Account.ID, "deploy-eu"); err != nil || !r.Disabled {
				t.Errorf("after disable: %+v %v", r, err)
			}
		})
	})
}

func TestTheAskPageOfAProductionRunShowsItUnmistakably(t *testing.T) {
	f := newFixture(t, apptest.SQLite)
	r := f.env.EnrollRunner(f.env.Account.ID, "deploy-eu")
	c := f.env.Connect(f.token)
	sha := strings.Repeat("ab", 32)
	out := c.OK("approvals_create", r.Ask("ada", sha, []string{"migrate.sh", "--to", "v42"}, "production", 10*time.Minute))
	b := signIn(t, f.env, f.owner)
	res, body := b.get("/approvals/" + out["approval_id"].(string))
	if res.StatusCode != http.StatusOK {
		t.Fatalf("ask page: %d", res.StatusCode)
	}
	page := parseHTML(t, body)
	for testid, want := range map[string]string{
		"argv":        "migrate.sh --to v42",
		"effect":      "PRODUCTION: this run changes production",
		"runner-name": "deploy-eu",
	} {
		if el := elements(page, byAttr("data-testid", testid)); len(el) != 1 || textOf(el[0]) != want {
			t.Errorf("%s: %d elements, want one reading %q", testid, len(el), want)
		}
	}
	for _, want := range []string{r.Runner.ID, sha, "data-countdown"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page does not show %s", want)
		}
	}
}
