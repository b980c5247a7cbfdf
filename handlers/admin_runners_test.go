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

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models"
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
		if textOf(ids[0]) != r.ID || r.PublicKey != key || r.TokenHash != models.HashToken(token) || !strings.HasPrefix(token, models.RunnerTokenPrefix+r.ID+".") {
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
			if _, err := f.env.Store.RunnerByName(ctx, f.env.Account.ID, "other"); models.CodeOf(err) != models.NotFound {
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
