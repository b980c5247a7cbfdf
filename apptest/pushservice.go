package apptest

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// PushService is a Web Push service on loopback for tests. It plays the
// browser's part too: it holds each subscription's private key and auth
// secret, and decrypts what the server sends per RFC 8291 (aes128gcm) and
// checks the VAPID header per RFC 8292, with code written apart from
// webpush-go.
type PushService struct {
	t      testing.TB
	Server *httptest.Server
	mu     sync.Mutex
	subs   map[string]*PushDevice
	got    []Delivery
	// Answer picks the HTTP status for each request (201 when nil).
	Answer func(device string, n int) (status int, header http.Header)
	notify chan Delivery
}

// PushDevice is one subscribed browser.
type PushDevice struct {
	Name   string
	key    *ecdh.PrivateKey
	auth   []byte
	hits   int
	Closed bool
}

// Delivery is one push the service took, decrypted.
type Delivery struct {
	Device    string
	Status    int
	Plaintext []byte
	Body      []byte // the encrypted body as sent
	Header    http.Header
	VAPID     VAPIDClaims
	At        time.Time
}

// VAPIDClaims are the verified claims of a push's VAPID JWT.
type VAPIDClaims struct {
	Aud string `json:"aud"`
	Exp int64  `json:"exp"`
	Sub string `json:"sub"`
	Key string // the k= public key, base64url
}

// NewPushService starts a push service on loopback.
func NewPushService(t testing.TB) *PushService {
	ps := &PushService{t: t, subs: map[string]*PushDevice{}, notify: make(chan Delivery, 10000)}
	ps.Server = httptest.NewServer(http.HandlerFunc(ps.serve))
	t.Cleanup(ps.Server.Close)
	return ps
}

// Host is the service's host:port, for COUNTERSIGN_PUSH_ALLOWED_HOSTS.
func (ps *PushService) Host() string { return strings.TrimPrefix(ps.Server.URL, "http://") }

// Subscribe makes a device and returns the subscription a browser would
// post: endpoint and base64url p256dh and auth keys.
func (ps *PushService) Subscribe(name string) (endpoint, p256dh, auth string) {
	key, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		ps.t.Fatal(err)
	}
	secret := make([]byte, 16)
	_, _ = rand.Read(secret)
	ps.mu.Lock()
	ps.subs[name] = &PushDevice{Name: name, key: key, auth: secret}
	ps.mu.Unlock()
	b64 := base64.RawURLEncoding.EncodeToString
	return ps.Server.URL + "/push/" + name, b64(key.PublicKey().Bytes()), b64(secret)
}

// DeviceSecrets returns a device's raw private key and auth secret, for a
// second decryption by another implementation.
func (ps *PushService) DeviceSecrets(name string) (privateKey, auth []byte) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	d := ps.subs[name]
	return d.key.Bytes(), d.auth
}

// Deliveries returns every push taken so far.
func (ps *PushService) Deliveries() []Delivery {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return append([]Delivery(nil), ps.got...)
}

// Requests counts the requests a device's endpoint got, whatever the answer.
func (ps *PushService) Requests(device string) int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if d := ps.subs[device]; d != nil {
		return d.hits
	}
	return 0
}

// Next waits for the next push taken (status 2xx).
func (ps *PushService) Next(timeout time.Duration) (Delivery, bool) {
	select {
	case d := <-ps.notify:
		return d, true
	case <-time.After(timeout):
		return Delivery{}, false
	}
}

func (ps *PushService) serve(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, "/push/")
	ps.mu.Lock()
	dev := ps.subs[name]
	if dev != nil {
		dev.hits++
	}
	n := 0
	if dev != nil {
		n = dev.hits
	}
	ps.mu.Unlock()
	if dev == nil {
		http.Error(w, "no such subscription", http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // the sender went away mid-send (the test is ending): nothing was delivered
	}
	status := http.StatusCreated
	if ps.Answer != nil {
		var h http.Header
		status, h = ps.Answer(name, n)
		for k, v := range h {
			w.Header()[k] = v
		}
	}
	if status/100 != 2 {
		w.WriteHeader(status)
		return
	}
	d := Delivery{Device: name, Status: status, Body: body, Header: r.Header.Clone(), At: time.Now()}
	if d.VAPID, err = verifyVAPID(r.Header.Get("Authorization"), ps.Server.URL); err != nil {
		ps.t.Errorf("push to %s: VAPID: %v", name, err)
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	if r.Header.Get("Content-Encoding") != "aes128gcm" {
		ps.t.Errorf("push to %s: Content-Encoding %q, want aes128gcm", name, r.Header.Get("Content-Encoding"))
	}
	if d.Plaintext, err = Decrypt(body, dev.key, dev.auth); err != nil {
		ps.t.Errorf("push to %s: decrypt: %v", name, err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ps.mu.Lock()
	ps.got = append(ps.got, d)
	ps.mu.Unlock()
	ps.notify <- d
	w.WriteHeader(status)
}

// Decrypt opens an aes128gcm Web Push body (RFC 8188 with RFC 8291 keys)
// for the subscription key uaKey and auth secret.
func Decrypt(body []byte, uaKey *ecdh.PrivateKey, authSecret []byte) ([]byte, error) {
	if len(body) < 21 {
		return nil, errors.New("body shorter than the aes128gcm header")
	}
	salt, rs, idlen := body[:16], binary.BigEndian.Uint32(body[16:20]), int(body[20])
	if len(body) < 21+idlen {
		return nil, errors.New("body shorter than its key id")
	}
	asPublic, record := body[21:21+idlen], body[21+idlen:]
	if uint32(len(record)) > rs {
		return nil, fmt.Errorf("a single record of %d bytes is over the record size %d", len(record), rs)
	}
	asKey, err := ecdh.P256().NewPublicKey(asPublic)
	if err != nil {
		return nil, fmt.Errorf("sender key: %w", err)
	}
	shared, err := uaKey.ECDH(asKey)
	if err != nil {
		return nil, err
	}
	keyInfo := append(append([]byte("WebPush: info\x00"), uaKey.PublicKey().Bytes()...), asPublic...)
	prkKey, err := hkdf.Extract(sha256.New, shared, authSecret)
	if err != nil {
		return nil, err
	}
	ikm, err := hkdf.Expand(sha256.New, prkKey, string(keyInfo), 32)
	if err != nil {
		return nil, err
	}
	prk, err := hkdf.Extract(sha256.New, ikm, salt)
	if err != nil {
		return nil, err
	}
	cek, err := hkdf.Expand(sha256.New, prk, "Content-Encoding: aes128gcm\x00", 16)
	if err != nil {
		return nil, err
	}
	nonce, err := hkdf.Expand(sha256.New, prk, "Content-Encoding: nonce\x00", 12)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	plain, err := gcm.Open(nil, nonce, record, nil)
	if err != nil {
		return nil, fmt.Errorf("open record: %w", err)
	}
	// The last record ends with the delimiter 0x02, then zero padding.
	end := len(plain) - 1
	for end >= 0 && plain[end] == 0 {
		end--
	}
	if end < 0 || plain[end] != 2 {
		return nil, errors.New("no last-record delimiter")
	}
	return plain[:end], nil
}

// verifyVAPID checks an "Authorization: vapid t=JWT, k=KEY" header: an ES256
// JWT signed by KEY for the push service's origin.
func verifyVAPID(header, origin string) (VAPIDClaims, error) {
	var c VAPIDClaims
	rest, ok := strings.CutPrefix(header, "vapid ")
	if !ok {
		return c, fmt.Errorf("authorization %q is not vapid", header)
	}
	var token string
	for _, part := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			token = v
		case "k":
			c.Key = v
		}
	}
	pub, err := base64.RawURLEncoding.DecodeString(c.Key)
	if err != nil {
		return c, errors.New("k is not base64url")
	}
	key, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), pub)
	if err != nil {
		return c, fmt.Errorf("k is not an uncompressed P-256 key: %w", err)
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return c, errors.New("t is not a JWT")
	}
	var head struct{ Alg, Typ string }
	if hb, err := base64.RawURLEncoding.DecodeString(parts[0]); err != nil || json.Unmarshal(hb, &head) != nil || head.Alg != "ES256" {
		return c, errors.New("the JWT is not ES256")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return c, errors.New("the JWT signature is not 64 bytes")
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if !ecdsa.Verify(key, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return c, errors.New("the JWT signature does not verify with k")
	}
	cb, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || json.Unmarshal(cb, &c) != nil {
		return c, errors.New("the JWT claims cannot be read")
	}
	if c.Aud != origin {
		return c, fmt.Errorf("aud %q, want the push service origin %q", c.Aud, origin)
	}
	if left := time.Until(time.Unix(c.Exp, 0)); left <= 0 || left > 24*time.Hour {
		return c, fmt.Errorf("exp is %s away, want within 24 h", left)
	}
	return c, nil
}
