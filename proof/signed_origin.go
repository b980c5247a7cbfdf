package proof

// SignedOrigin is the origin the proof's clientDataJSON names, where the
// passkey signed; "" when clientDataJSON cannot be read. It is the signer's
// word, checked by Verify against the origin expected, and is read alone
// only to tell a verifier which --origin a proof that fails on its origin
// alone was signed at.
func (p *Proof) SignedOrigin() string {
	cd, err := readClientData(p.ClientDataJSON)
	if err != nil {
		return ""
	}
	return cd.Origin
}
