package ask

// KindAuthorization is provisional until the kind branch merges.
const KindAuthorization = "authorization"

type AuthorizationClient struct{ ID, Name string }
type AuthorizationPayload struct {
	Client               AuthorizationClient
	Scope                string
	AuthorizationDetails []byte
	BindingMessage       string
}

func CheckScope(s string) *Refusal                            { panic("provisional") }
func CheckBindingMessage(s string) *Refusal                   { panic("provisional") }
func ParseAuthorizationDetails(raw []byte) ([]byte, *Refusal) { panic("provisional") }
