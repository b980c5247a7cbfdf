package handlers_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/audit"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
)

// takeover is the scene of the invite takeover: dave owns account A with a
// passkey; mallory is an admin of account B with hers; ali is an admin of A.
type takeover struct {
	env          *apptest.Env
	a, b         *people.Account
	dave, ali    *people.Member
	mallory      *people.Member
	daveBrowser  *apptest.Browser
	malloryPages *apptest.Browser
}

func newTakeover(t *testing.T, db apptest.Database) *takeover {
	t.Helper()
	ctx := context.Background()
	env := apptest.StartWeb(t, db, nil)
	b, err := env.Store.CreateAccount(ctx, "bravo")
	if err != nil {
		t.Fatal(err)
	}
	s := &takeover{env: env, a: env.Account, b: b}
	s.daveBrowser = join(t, env, s.a.ID, core.RoleOwner, "dave")
	join(t, env, s.a.ID, core.RoleAdmin, "ali")
	s.malloryPages = join(t, env, s.b.ID, core.RoleAdmin, "mallory")
	s.dave = s.member(t, s.a.ID, "dave")
	s.ali = s.member(t, s.a.ID, "ali")
	s.mallory = s.member(t, s.b.ID, "mallory")
	return s
}

func (s *takeover) member(t *testing.T, accountID, subject string) *people.Member {
	t.Helper()
	m, err := s.env.Store.MemberBySubject(context.Background(), accountID, subject)
	if err != nil {
		t.Fatalf("member %s: %v", subject, err)
	}
	return m
}

// daveUnchanged checks that dave still has exactly his one passkey, and his
// one membership: owner of A.
func (s *takeover) daveUnchanged(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	keys, err := s.env.Store.DeviceKeys(ctx, s.dave.ID)
	if err != nil || len(keys) != 1 || keys[0].ID != s.daveBrowser.Passkey.CredentialIDString() {
		t.Fatalf("dave's passkeys = %+v (%v); want only his own", keys, err)
	}
	ms, err := s.env.Store.Memberships(ctx, s.dave.ID)
	if err != nil || len(ms) != 1 || ms[0].AccountID != s.a.ID || ms[0].Role != core.RoleOwner {
		t.Fatalf("dave's memberships = %+v (%v); want owner of A only", ms, err)
	}
}

// invites counts the account's unused invites (the scene's own are used).
func (s *takeover) invites(t *testing.T, accountID string) int {
	t.Helper()
	inv, err := s.env.Store.Invites(context.Background(), accountID)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, i := range inv {
		if i.UsedAt == nil {
			n++
		}
	}
	return n
}

// legacyInvite puts an invite row straight into the database, as one made
// before invites had kinds: a new-person invite that names subject.
func (s *takeover) legacyInvite(t *testing.T, accountID string, role core.Role, subject string) string {
	t.Helper()
	token := "inv_legacy" + strings.ReplaceAll(people.NewPersonID(), "_", "")
	now := time.Now()
	if err := s.env.Store.DB().Exec(`INSERT INTO invites (token_hash, account_id, role, subject, created_by, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, core.HashToken(token), accountID, role, subject, "mallory", now, now.Add(time.Hour)).Error; err != nil {
		t.Fatal(err)
	}
	return token
}

// unspent checks that the invite of token can still be used.
func (s *takeover) unspent(t *testing.T, token string) {
	t.Helper()
	if _, err := s.env.Store.InviteByToken(context.Background(), token); err != nil {
		t.Fatalf("the invite was spent or is gone: %v", err)
	}
}

func TestAnInviteCannotTakeOverAnotherAccountsPerson(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := newTakeover(t, db)
		ctx := context.Background()
		pages := signIn(t, s.env, s.mallory)

		for _, tc := range []struct {
			name string
			form url.Values
		}{
			{"an invite naming dave", url.Values{"role": {"admin"}, "subject": {"dave"}}},
			{"a new-person invite naming dave", url.Values{"kind": {"new_person"}, "role": {"member"}, "subject": {"dave"}}},
		} {
			t.Run(tc.name+" is refused when it is made, pointing at an add-role invite", func(t *testing.T) {
				res, body := pages.post("/admin/invites", tc.form, true)
				if res.StatusCode != http.StatusConflict || !strings.Contains(body, "add-role invite") {
					t.Fatalf("POST /admin/invites %v: %d, want 409 saying to use an add-role invite\n%s", tc.form, res.StatusCode, body)
				}
				if strings.Contains(body, "/invite/inv_") {
					t.Fatalf("an invite URL was shown")
				}
				if n := s.invites(t, s.b.ID); n != 0 {
					t.Fatalf("%d invites were made", n)
				}
				s.daveUnchanged(t)
			})
		}

		t.Run("the store refuses it too, with the field named", func(t *testing.T) {
			_, _, err := s.env.Store.CreateInvite(ctx, people.NewInvite{AccountID: s.b.ID, Role: core.RoleMember, Subject: "dave", By: s.mallory.AsInviter()})
			var r *core.Error
			if core.CodeOf(err) != core.FailedPrecondition || !errors.As(err, &r) || r.Field != "subject" {
				t.Fatalf("CreateInvite naming dave: %v; want FAILED_PRECONDITION on subject", err)
			}
		})

		t.Run("a legacy invite naming dave registers no passkey onto him", func(t *testing.T) {
			token := s.legacyInvite(t, s.b.ID, core.RoleAdmin, "dave")
			attacker := apptest.NewBrowser(t, s.env.URL)
			r := attacker.AcceptInvite(token, "dave")
			if r.Status != http.StatusConflict || r.Code() != "FAILED_PRECONDITION" || r.Field() != "subject" {
				t.Fatalf("accept: %s; want 409 FAILED_PRECONDITION on subject", r)
			}
			if attacker.Session() != "" {
				t.Fatalf("the attacker was signed in")
			}
			s.daveUnchanged(t)
			s.unspent(t, token)
		})

		t.Run("a person made after registration began gets no passkey when it finishes", func(t *testing.T) {
			// The invite names zed, who does not exist yet: registration begins.
			token := s.legacyInvite(t, s.b.ID, core.RoleAdmin, "zed")
			attacker := apptest.NewBrowser(t, s.env.URL)
			begin := attacker.Post("/invite/"+token+"/begin", map[string]string{"subject": "zed"})
			if begin.Status != http.StatusOK {
				t.Fatalf("begin: %s", begin)
			}
			// zed joins A through an invite of their own before the attacker finishes.
			join(t, s.env, s.a.ID, core.RoleMember, "zed")
			zed := s.member(t, s.a.ID, "zed")
			id, options := begin.Ceremony()
			credential, err := attacker.Passkey.Register(attacker.Origin, options)
			if err != nil {
				t.Fatal(err)
			}
			r := attacker.Post("/invite/"+token+"/finish", map[string]any{"ceremony": id, "credential": json.RawMessage(credential)})
			if r.Status != http.StatusConflict || r.Code() != "FAILED_PRECONDITION" || r.Field() != "subject" {
				t.Fatalf("finish: %s; want 409 FAILED_PRECONDITION on subject", r)
			}
			keys, err := s.env.Store.DeviceKeys(ctx, zed.ID)
			if err != nil || len(keys) != 1 || keys[0].ID == attacker.Passkey.CredentialIDString() {
				t.Fatalf("zed's passkeys = %+v (%v); want only zed's own", keys, err)
			}
			if _, err := s.env.Store.MemberByID(ctx, s.b.ID, zed.ID); core.CodeOf(err) != core.NotFound {
				t.Fatalf("zed became a member of B: %v", err)
			}
			if attacker.Session() != "" {
				t.Fatalf("the attacker was signed in")
			}
			s.unspent(t, token)
		})

		t.Run("no exported key of A or B is the attacker's", func(t *testing.T) {
			for _, acct := range []*people.Account{s.a, s.b} {
				export, err := s.env.Store.ExportKeys(ctx, acct.ID, "localhost")
				if err != nil {
					t.Fatal(err)
				}
				for _, k := range export.Keys {
					if id := base64.RawURLEncoding.EncodeToString(k.CredentialID); k.Person == "dave" && id != s.daveBrowser.Passkey.CredentialIDString() {
						t.Fatalf("account %s exports key %s as dave's", acct.Name, id)
					}
				}
			}
		})
	})
}

func TestAnAdminCannotEscalateInTheirOwnAccount(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := newTakeover(t, db)
		ctx := context.Background()
		pages := signIn(t, s.env, s.ali)

		cases := []struct {
			name   string
			form   url.Values
			status int
			says   string
		}{
			{"an admin cannot invite an owner", url.Values{"role": {"owner"}}, http.StatusForbidden, "above your own"},
			{"an admin cannot add the owner role to someone", url.Values{"kind": {"add_role"}, "role": {"owner"}, "subject": {"mallory"}}, http.StatusForbidden, "above your own"},
			{"an admin cannot invite the owner's subject", url.Values{"role": {"admin"}, "subject": {"dave"}}, http.StatusConflict, "add-role invite"},
			{"an add-role invite for a member of this account is refused", url.Values{"kind": {"add_role"}, "role": {"admin"}, "subject": {"dave"}}, http.StatusConflict, "already a member"},
			{"an add-role invite for nobody is refused", url.Values{"kind": {"add_role"}, "role": {"member"}, "subject": {"nobody"}}, http.StatusNotFound, "no person"},
			{"an add-role invite without a subject is refused", url.Values{"kind": {"add_role"}, "role": {"member"}}, http.StatusBadRequest, "names the existing person"},
			{"an unknown kind is refused", url.Values{"kind": {"take_over"}, "role": {"member"}}, http.StatusBadRequest, "take_over"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				res, body := pages.post("/admin/invites", tc.form, true)
				if res.StatusCode != tc.status || !strings.Contains(body, tc.says) {
					t.Fatalf("POST /admin/invites %v: %d, want %d saying %q\n%s", tc.form, res.StatusCode, tc.status, tc.says, body)
				}
				if n := s.invites(t, s.a.ID); n != 0 {
					t.Fatalf("%d invites were made", n)
				}
				s.daveUnchanged(t)
			})
		}

		t.Run("the store holds the ceiling whoever calls it", func(t *testing.T) {
			bob, err := s.env.Store.AddMember(ctx, s.a.ID, "bob", "Bob", core.RoleMember)
			if err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				name string
				by   people.Inviter
				role core.Role
				code core.Code
			}{
				{"an admin asking for owner", s.ali.AsInviter(), core.RoleOwner, core.PermissionDenied},
				{"a member asking for member", bob.AsInviter(), core.RoleMember, core.PermissionDenied},
				{"an admin of another account", s.mallory.AsInviter(), core.RoleMember, core.PermissionDenied},
				{"nobody at all", people.Inviter{Name: "ghost"}, core.RoleMember, core.InvalidArgument},
			} {
				_, _, err := s.env.Store.CreateInvite(ctx, people.NewInvite{AccountID: s.a.ID, Role: tc.role, By: tc.by})
				if core.CodeOf(err) != tc.code {
					t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
				}
			}
			if n := s.invites(t, s.a.ID); n != 0 {
				t.Fatalf("%d invites were made", n)
			}
			if _, _, err := s.env.Store.CreateInvite(ctx, people.NewInvite{AccountID: s.a.ID, Role: core.RoleAdmin, By: s.ali.AsInviter()}); err != nil {
				t.Fatalf("an admin inviting an admin: %v", err)
			}
		})

		t.Run("a legacy owner invite naming dave does not make its opener dave", func(t *testing.T) {
			token := s.legacyInvite(t, s.a.ID, core.RoleOwner, "dave")
			attacker := apptest.NewBrowser(t, s.env.URL)
			if r := attacker.AcceptInvite(token, "dave"); r.Status != http.StatusConflict || r.Field() != "subject" {
				t.Fatalf("accept: %s; want 409 on subject", r)
			}
			if r := attacker.AcceptRoleInvite(token); r.Status != http.StatusConflict || r.Field() != "invite" {
				t.Fatalf("accept by signing in: %s; want 409 on invite", r)
			}
			if attacker.Session() != "" {
				t.Fatalf("the attacker was signed in")
			}
			s.daveUnchanged(t)
			s.unspent(t, token)
		})

		t.Run("the invite form offers an admin no owner role", func(t *testing.T) {
			_, body := pages.get("/admin/members")
			sel := elements(parseHTML(t, body), byAttr("id", "invite-role"))
			if len(sel) != 1 || strings.Contains(textOf(sel[0]), "owner") {
				t.Fatalf("the invite role select offers owner to an admin")
			}
		})
	})
}

func TestAnAddRoleInviteIsAcceptedOnlyByItsPersonsOwnPasskey(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := newTakeover(t, db)
		ctx := context.Background()
		pages := signIn(t, s.env, s.mallory)

		res, body := pages.post("/admin/invites", url.Values{"kind": {"add_role"}, "role": {"member"}, "subject": {"dave"}}, true)
		if res.StatusCode != http.StatusOK || !strings.Contains(body, "signing in with a passkey they already have") {
			t.Fatalf("make an add-role invite: %d\n%s", res.StatusCode, body)
		}
		box := elements(parseHTML(t, body), byAttr("data-testid", "invite-url"))
		if len(box) != 1 {
			t.Fatalf("no invite URL shown")
		}
		token := strings.TrimPrefix(textOf(box[0]), s.env.URL+"/invite/")
		inv, err := s.env.Store.InviteByToken(ctx, token)
		if err != nil || inv.Kind != people.InviteAddRole || inv.Subject != "dave" || inv.Role != core.RoleMember || inv.CreatedBy != "mallory" {
			t.Fatalf("invite = %+v (%v)", inv, err)
		}
		if rows := elements(parseHTML(t, body), byAttr("data-invite-kind", "add_role")); len(rows) != 1 {
			t.Fatalf("the invite list does not show the invite as add role")
		}

		t.Run("its page asks to sign in, and has no registration form", func(t *testing.T) {
			b := apptest.NewBrowser(t, s.env.URL)
			r := b.Get("/invite/" + token)
			page := string(r.Raw)
			if r.Status != http.StatusOK || !strings.Contains(page, `data-testid="accept-invite"`) || strings.Contains(page, `id="register"`) ||
				!strings.Contains(page, "Sign in with your passkey to accept") {
				t.Fatalf("GET /invite/<add-role>: %s", r)
			}
		})

		t.Run("it registers no passkey", func(t *testing.T) {
			attacker := apptest.NewBrowser(t, s.env.URL)
			if r := attacker.AcceptInvite(token, "dave"); r.Status != http.StatusConflict || r.Field() != "invite" {
				t.Fatalf("register through an add-role invite: %s; want 409 on invite", r)
			}
			s.daveUnchanged(t)
			s.unspent(t, token)
		})

		t.Run("another person's passkey does not accept it", func(t *testing.T) {
			before, err := s.env.Store.DeviceKeyByID(ctx, s.malloryPages.Passkey.CredentialIDString())
			if err != nil {
				t.Fatal(err)
			}
			// Her passkey in a browser holding no session of hers: one that
			// holds one is refused before any passkey is asked for.
			mallory := apptest.NewBrowser(t, s.env.URL)
			mallory.Passkey = s.malloryPages.Passkey
			r := mallory.AcceptRoleInvite(token)
			if r.Status != http.StatusForbidden || r.Code() != "PERMISSION_DENIED" || r.Field() != "credential" || !strings.Contains(r.String(), "dave") {
				t.Fatalf("mallory accepts dave's invite: %s; want 403 on credential", r)
			}
			after, err := s.env.Store.DeviceKeyByID(ctx, s.malloryPages.Passkey.CredentialIDString())
			if err != nil || after.SignCount != before.SignCount {
				t.Fatalf("mallory's passkey record changed: %d → %d (%v)", before.SignCount, after.SignCount, err)
			}
			s.daveUnchanged(t)
			s.unspent(t, token)
		})

		t.Run("a passkey claiming dave's user handle does not accept it", func(t *testing.T) {
			forger := apptest.NewBrowser(t, s.env.URL)
			if r := forger.AcceptInvite(newPersonInvite(t, s), "forger"); r.Status != http.StatusOK {
				t.Fatalf("the forger's own sign-up: %s", r)
			}
			forged := apptest.NewBrowser(t, s.env.URL) // without the forger's session
			forged.Passkey = forger.Passkey
			forged.Passkey.UserHandle = []byte(s.dave.ID)
			r := forged.AcceptRoleInvite(token)
			if r.Status != http.StatusForbidden || r.Code() != "PERMISSION_DENIED" {
				t.Fatalf("accept with a forged user handle: %s; want 403", r)
			}
			s.daveUnchanged(t)
			s.unspent(t, token)
		})

		t.Run("dave accepts it with the passkey he has", func(t *testing.T) {
			dave := apptest.NewBrowser(t, s.env.URL)
			dave.Passkey = s.daveBrowser.Passkey
			r := dave.AcceptRoleInvite(token)
			if r.Status != http.StatusOK || r.Body["redirect"] != "/" || dave.Session() == "" {
				t.Fatalf("dave accepts: %s", r)
			}
			m, err := s.env.Store.MemberByID(ctx, s.b.ID, s.dave.ID)
			if err != nil || m.Role != core.RoleMember {
				t.Fatalf("dave in B: %+v (%v); want a member", m, err)
			}
			keys, err := s.env.Store.DeviceKeys(ctx, s.dave.ID)
			if err != nil || len(keys) != 1 || keys[0].ID != s.daveBrowser.Passkey.CredentialIDString() {
				t.Fatalf("dave's passkeys = %+v (%v); want only his own", keys, err)
			}
			if _, err := s.env.Store.InviteByToken(ctx, token); core.CodeOf(err) != core.FailedPrecondition {
				t.Fatalf("the invite was not spent: %v", err)
			}
			events, _, err := s.env.Store.Audit(ctx, s.b.ID, audit.AuditFilter{Step: people.StepMemberJoined, Actor: "dave"})
			if err != nil || len(events) != 1 || events[0].ApprovalID != "" || !strings.Contains(events[0].Note, "invited by mallory") {
				t.Fatalf("member_joined events of dave in B = %+v (%v)", events, err)
			}
			if again := dave.AcceptRoleInvite(token); again.Status != http.StatusConflict {
				t.Fatalf("a used invite accepted again: %s", again)
			}
		})

		t.Run("each joining is on its account's sealed chain, which verifies", func(t *testing.T) {
			sealer := s.env.Store.NewAuditSealer()
			for _, acct := range []*people.Account{s.a, s.b} {
				joined, _, err := s.env.Store.Audit(ctx, acct.ID, audit.AuditFilter{Step: people.StepMemberJoined})
				if err != nil || len(joined) == 0 {
					t.Fatalf("account %s has no member_joined events (%v)", acct.Name, err)
				}
				for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
					if _, err := sealer.Seal(ctx); err != nil {
						t.Fatal(err)
					}
					if head, err := s.env.Store.AuditHead(ctx, acct.ID); err == nil && head.Unsealed == 0 && head.Pos >= int64(len(joined)) {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("account %s was not sealed within 10 s", acct.Name)
					}
				}
				report, err := s.env.Store.VerifyAudit(ctx, acct.ID)
				if err != nil || !report.OK() {
					t.Fatalf("verify %s: %+v, %v", acct.Name, report, err)
				}
			}
			_, body := signIn(t, s.env, s.dave).get("/admin/audit?step=member_joined")
			if !strings.Contains(body, "member joined") {
				t.Fatalf("the audit page does not show the joining:\n%s", body)
			}
		})
	})
}

// newPersonInvite is an operator's invite to B for a new person.
func newPersonInvite(t *testing.T, s *takeover) string {
	t.Helper()
	token, _, err := s.env.Store.CreateInvite(context.Background(), people.NewInvite{AccountID: s.b.ID, Role: core.RoleMember, By: people.OperatorInviter("test")})
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// Subjects are unique under Unicode case folding and NFKC: an open invite
// taken as "Bob" while bob exists would make a second person whose name
// reads as bob's in decided_by and the audit log.
func TestAnInviteCannotMakeASubjectThatReadsAsAnExistingOne(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		env := apptest.StartWeb(t, db, nil)
		join(t, env, env.Account.ID, core.RoleOwner, "bob")
		persons := func() int64 {
			n, err := env.Store.CountPersons(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		before := persons()
		for _, subject := range []string{"Bob", "BOB", "bOb"} {
			t.Run("an open invite accepted as "+subject+" is refused naming bob", func(t *testing.T) {
				token, _, err := env.Store.CreateInvite(ctx, people.NewInvite{AccountID: env.Account.ID, Role: core.RoleMember, By: people.OperatorInviter("test")})
				if err != nil {
					t.Fatal(err)
				}
				r := apptest.NewBrowser(t, env.URL).AcceptInvite(token, subject)
				if r.Status != http.StatusConflict || r.Code() != "FAILED_PRECONDITION" || r.Field() != "subject" || !strings.Contains(r.String(), `existing person \"bob\"`) {
					t.Fatalf("accept as %s: %s; want 409 FAILED_PRECONDITION on subject naming bob", subject, r)
				}
				if n := persons(); n != before {
					t.Fatalf("%d persons after the refusal, want %d", n, before)
				}
			})
		}
		t.Run("the store refuses it at finish too, whatever the page checked", func(t *testing.T) {
			token, _, err := env.Store.CreateInvite(ctx, people.NewInvite{AccountID: env.Account.ID, Role: core.RoleMember, By: people.OperatorInviter("test")})
			if err != nil {
				t.Fatal(err)
			}
			_, err = env.Store.AcceptInvite(ctx, token, people.NewPersonID(), "Bob", "Bob", people.DeviceKey{ID: "cred-bob-2", PublicKey: "x", Credential: "{}"})
			if core.CodeOf(err) != core.FailedPrecondition || core.FieldOf(err) != "subject" {
				t.Fatalf("AcceptInvite as Bob: %v; want FAILED_PRECONDITION on subject", err)
			}
			if n := persons(); n != before {
				t.Fatalf("%d persons after the refusal, want %d", n, before)
			}
		})
		t.Run("a new-person invite naming Bob is refused when made; an add-role one for Bob is for bob", func(t *testing.T) {
			_, _, err := env.Store.CreateInvite(ctx, people.NewInvite{AccountID: env.Account.ID, Role: core.RoleMember, Subject: "Bob", By: people.OperatorInviter("test")})
			if core.CodeOf(err) != core.FailedPrecondition || core.FieldOf(err) != "subject" || !strings.Contains(err.Error(), `"bob"`) {
				t.Fatalf("a new-person invite naming Bob: %v; want FAILED_PRECONDITION on subject naming bob", err)
			}
			other, err := env.Store.CreateAccount(ctx, "other")
			if err != nil {
				t.Fatal(err)
			}
			_, inv, err := env.Store.CreateInvite(ctx, people.NewInvite{AccountID: other.ID, Kind: people.InviteAddRole, Role: core.RoleMember, Subject: "Bob", By: people.OperatorInviter("test")})
			if err != nil || inv.Subject != "bob" {
				t.Fatalf("an add-role invite naming Bob = %+v, %v; want one for bob", inv, err)
			}
		})
		t.Run("a subject in agents' namespace is refused", func(t *testing.T) {
			token, _, err := env.Store.CreateInvite(ctx, people.NewInvite{AccountID: env.Account.ID, Role: core.RoleMember, By: people.OperatorInviter("test")})
			if err != nil {
				t.Fatal(err)
			}
			r := apptest.NewBrowser(t, env.URL).AcceptInvite(token, "Agent:bot")
			if r.Status != http.StatusBadRequest || r.Field() != "subject" {
				t.Fatalf("accept as Agent:bot: %s; want 400 on subject", r)
			}
		})
	})
}
