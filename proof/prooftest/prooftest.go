// Package prooftest makes decision proofs with a key the test holds, the way
// an authenticator would sign them or a forger could. Tests use it to build
// test vectors and the proofs a verifier must refuse: an assertion made at
// another origin, in a cross-origin frame, for another ceremony type.
package prooftest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/countersign/countersign/proof"
)

// Key is a P-256 passkey (COSE algorithm ES256) whose private half the test holds.
type Key struct {
	priv *ecdsa.PrivateKey
}

// NewKey makes a fresh key.
func NewKey() *Key {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return &Key{priv: priv}
}

// KeyFromScalar is the key whose private scalar is d (32 bytes, big-endian).
func KeyFromScalar(d []byte) (*Key, error) {
	priv, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), d)
	if err != nil {
		return nil, fmt.Errorf("private scalar: %w", err)
	}
	return &Key{priv: priv}, nil
}

// Scalar is the private scalar, 32 bytes big-endian.
func (k *Key) Scalar() []byte {
	d, err := k.priv.Bytes()
	if err != nil {
		panic(err)
	}
	return d
}

// COSE is the public key as a COSE_Key in CTAP2 canonical CBOR:
// {1: 2 (EC2), 3: -7 (ES256), -1: 1 (P-256), -2: x, -3: y}.
func (k *Key) COSE() []byte {
	raw, err := k.priv.PublicKey.Bytes() // 0x04 || x || y
	if err != nil {
		panic(err)
	}
	out := []byte{0xa5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21, 0x58, 0x20}
	out = append(out, raw[1:33]...)
	out = append(out, 0x22, 0x58, 0x20)
	return append(out, raw[33:65]...)
}

// Assertion is what an authenticator and a browser put around a signature.
// The zero value is what a browser at https://<rp id> would send; a test
// changes a field to make the lie it wants.
type Assertion struct {
	Type        string // clientDataJSON type; "" is webauthn.get
	Origin      string // "" is https://<rp_id>
	OriginFirst string // when set, a first "origin" member with this origin comes before Origin's: two members, as no browser writes
	CrossOrigin bool
	Flags       byte   // authenticatorData flags; 0 is UP|UV (0x05)
	Counter     uint32 // the signature counter
	RPID        string // hashed into authenticatorData; "" is the proof's rp_id
}

// Sign makes p an assertion over its own challenge (domain, approval_id,
// payload_sha256, decision, nonce, and the requirement when p binds one): it sets public_key, client_data_json,
// authenticator_data and signature.
func (k *Key) Sign(p *proof.Proof, a Assertion) {
	if a.Type == "" {
		a.Type = "webauthn.get"
	}
	if a.Origin == "" {
		a.Origin = "https://" + p.RPID
	}
	if a.Flags == 0 {
		a.Flags = 0x05
	}
	if a.RPID == "" {
		a.RPID = p.RPID
	}
	challenge := proof.Challenge(p.Domain, p.ApprovalID, p.PayloadSHA256, p.Decision, p.Nonce)
	if p.Requirement != nil { // on an ask a rule covers: the v2 challenge, which binds the requirement
		h, err := p.Requirement.SHA256()
		if err != nil {
			panic(err)
		}
		challenge = proof.RequirementChallenge(p.ApprovalID, p.PayloadSHA256, p.Decision, h, p.Nonce)
	}
	cd, err := json.Marshal(struct {
		Type        string `json:"type"`
		Challenge   string `json:"challenge"`
		Origin      string `json:"origin"`
		CrossOrigin bool   `json:"crossOrigin"`
	}{a.Type, base64.RawURLEncoding.EncodeToString(challenge), a.Origin, a.CrossOrigin})
	if err != nil {
		panic(err)
	}
	if a.OriginFirst != "" {
		first, _ := json.Marshal(a.OriginFirst)
		cd = bytes.Replace(cd, []byte(`"origin":`), []byte(`"origin":`+string(first)+`,"origin":`), 1)
	}
	rpHash := sha256.Sum256([]byte(a.RPID))
	ad := append(rpHash[:], a.Flags)
	ad = binary.BigEndian.AppendUint32(ad, a.Counter)
	cdHash := sha256.Sum256(cd)
	digest := sha256.Sum256(append(bytes.Clone(ad), cdHash[:]...))
	sig, err := ecdsa.SignASN1(rand.Reader, k.priv, digest[:])
	if err != nil {
		panic(err)
	}
	p.PublicKey, p.ClientDataJSON, p.AuthenticatorData, p.Signature = k.COSE(), cd, ad, sig
}
