package apptest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Mailpit is a real SMTP server started for a test (github.com/axllent/mailpit,
// built by .ci/run), which requires STARTTLS with a certificate of its own
// authority and a login, and whose API reads back what it received.
type Mailpit struct {
	SMTP     string // host:port
	API      string // http://host:port
	CAFile   string // the PEM certificate the server presents, to trust
	Username string
	Password string
}

// MailpitBinary is the mailpit command: $COUNTERSIGN_TEST_MAILPIT, else the
// one .ci/run builds (~/.cache/countersign/mailpit-v1.33.1/mailpit), else
// mailpit on the PATH. The test is skipped without it, and fails under CI.
func MailpitBinary(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("COUNTERSIGN_TEST_MAILPIT"); bin != "" {
		return bin
	}
	if home, err := os.UserHomeDir(); err == nil {
		bin := filepath.Join(home, ".cache", "countersign", "mailpit-v1.33.1", "mailpit")
		if _, err := os.Stat(bin); err == nil {
			return bin
		}
	}
	if bin, err := exec.LookPath("mailpit"); err == nil {
		return bin
	}
	const how = "GOBIN=~/.cache/countersign/mailpit-v1.33.1 go install github.com/axllent/mailpit@v1.33.1 (.ci/run does)"
	if os.Getenv("CI") != "" {
		t.Fatal("mailpit is missing: " + how)
	}
	t.Skip("mailpit is missing: " + how)
	return ""
}

// StartMailpit starts Mailpit for the test, stopped when it ends.
func StartMailpit(t testing.TB) *Mailpit {
	t.Helper()
	bin := MailpitBinary(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeCert(t, certFile, keyFile)
	m := &Mailpit{SMTP: "localhost:" + freePort(t), API: "http://127.0.0.1:" + freePort(t), CAFile: certFile, Username: "countersign", Password: "s3cret-for-the-test"}
	auth := filepath.Join(dir, "auth")
	if err := os.WriteFile(auth, []byte(m.Username+":"+m.Password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--smtp", m.SMTP, "--listen", m.API[len("http://"):], "--database", filepath.Join(dir, "mailpit.db"),
		"--smtp-tls-cert", certFile, "--smtp-tls-key", keyFile, "--smtp-require-starttls", "--smtp-auth-file", auth, "--smtp-disable-rdns", "--quiet")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start mailpit: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		res, err := http.Get(m.API + "/api/v1/messages")
		if err == nil {
			res.Body.Close()
			if c, err := net.DialTimeout("tcp", m.SMTP, time.Second); err == nil {
				c.Close()
				return m
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("mailpit did not answer within 30 s: %v", err)
		}
	}
}

// SMTPURL is the COUNTERSIGN_SMTP_URL of the server, with its login.
func (m *Mailpit) SMTPURL() string {
	return "smtp://" + url.UserPassword(m.Username, m.Password).String() + "@" + m.SMTP
}

// MailpitMessage is a message as Mailpit's API lists it, with its bodies.
type MailpitMessage struct {
	ID        string `json:"ID"`
	MessageID string `json:"MessageID"`
	Subject   string `json:"Subject"`
	To        []struct {
		Address string `json:"Address"`
	} `json:"To"`
	Text string `json:"Text"`
	HTML string `json:"HTML"`
}

// Messages reads every message Mailpit received, newest first, with bodies.
func (m *Mailpit) Messages(t testing.TB) []MailpitMessage {
	t.Helper()
	var list struct {
		Messages []MailpitMessage `json:"messages"`
	}
	m.get(t, "/api/v1/messages?limit=1000", &list)
	for i := range list.Messages {
		m.get(t, "/api/v1/message/"+url.PathEscape(list.Messages[i].ID), &list.Messages[i])
	}
	return list.Messages
}

// WaitMessages waits until Mailpit holds at least n messages and returns them.
func (m *Mailpit) WaitMessages(t testing.TB, n int, within time.Duration) []MailpitMessage {
	t.Helper()
	var got []MailpitMessage
	for deadline := time.Now().Add(within); ; time.Sleep(50 * time.Millisecond) {
		if got = m.Messages(t); len(got) >= n || time.Now().After(deadline) {
			return got
		}
	}
}

func (m *Mailpit) get(t testing.TB, path string, out any) {
	t.Helper()
	res, err := http.Get(m.API + path)
	if err != nil {
		t.Fatalf("mailpit API %s: %v", path, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("mailpit API %s: %s", path, res.Status)
	}
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		t.Fatalf("mailpit API %s: %v", path, err)
	}
}

// freePort is a TCP port free on loopback a moment ago.
func freePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// writeCert writes a self-signed certificate for localhost and 127.0.0.1.
func writeCert(t testing.TB, certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "localhost"},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(fmt.Errorf("write key: %w", err))
	}
}
