// Package views holds Countersign's templ components. Everything a person,
// agent or runner wrote is rendered as escaped text, never as markup.
package views

// Page is what every full page needs from its handler.
type Page struct {
	Title  string
	CSRF   string
	Viewer *Viewer // nil when nobody is signed in
	Nav    string  // the nav item to mark current
	Flash  string  // a one-line notice, such as "Passkey added"
}

// Viewer is the signed-in person in the account they are using.
type Viewer struct {
	PersonID    string
	Subject     string
	DisplayName string
	Role        string
	AccountID   string
	AccountName string
}

// IsAdmin says whether the viewer may use the admin pages.
func (v *Viewer) IsAdmin() bool { return v != nil && (v.Role == "owner" || v.Role == "admin") }

// Name is how the viewer is shown.
func (v *Viewer) Name() string {
	if v.DisplayName != "" {
		return v.DisplayName
	}
	return v.Subject
}
