package core

import (
	"crypto/rand"
)

// randomToken returns a prefixed secret of 256 random bits.
func RandomToken(prefix string) string {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		panic(err)
	}
	return prefix + IDEncoding.EncodeToString(raw)
}
