package views

import (
	"net/url"
	"slices"
	"time"

	"github.com/a-h/templ"
)

// CIBAClientsView is Admin → CIBA clients: the account's clients, the form
// to register one (filled again after a refusal) and a new client's
// secret, shown once.
type CIBAClientsView struct {
	Clients []CIBAClientRow
	People  []CIBAPersonChoice // the members a client may be given
	Form    CIBAClientForm
	// NewClient and NewSecret: the client just registered, and its
	// client_secret_basic secret, shown this once ("" for private_key_jwt).
	NewClient *CIBAClientRow
	NewSecret string
	// Discovery is the provider's discovery document URL, for the client's
	// configuration.
	Discovery  string
	Error      string
	ErrorField string
}

// CIBAClientRow is one CIBA client.
type CIBAClientRow struct {
	ID, Name, Method, Mode, NotificationEndpoint, Agent, CreatedBy string
	People                                                         []string // their subjects
	CreatedAt                                                      time.Time
	RevokedAt                                                      *time.Time
}

// CIBAPersonChoice is a member a client may be allowed to ask.
type CIBAPersonChoice struct{ ID, Subject, Name string }

// CIBAClientForm is the registration form as sent.
type CIBAClientForm struct {
	Name, Method, JWKS, Mode, NotificationEndpoint string
	PersonIDs                                      []string
}

func (f CIBAClientForm) chose(personID string) bool { return slices.Contains(f.PersonIDs, personID) }

func cibaRevokePath(id string) templ.SafeURL {
	return templ.SafeURL("/admin/ciba-clients/" + url.PathEscape(id) + "/revoke")
}
