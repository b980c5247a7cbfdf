package app

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// loadWith loads the configuration from env alone.
func loadWith(env map[string]string) (Config, error) {
	return LoadConfig(func(k string) string { return env[k] })
}

func TestTLSSettingsAreCheckedAtStart(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		refusal string // "" when the configuration loads
	}{
		{"a certificate without its key is refused", map[string]string{"COUNTERSIGN_TLS_CERT": "c.pem", "COUNTERSIGN_BASE_URL": "https://a.example"}, "COUNTERSIGN_TLS_CERT: COUNTERSIGN_TLS_CERT and COUNTERSIGN_TLS_KEY go together"},
		{"a key without its certificate is refused", map[string]string{"COUNTERSIGN_TLS_KEY": "k.pem", "COUNTERSIGN_BASE_URL": "https://a.example"}, "go together"},
		{"a certificate with an http base URL is refused", map[string]string{"COUNTERSIGN_TLS_CERT": "c.pem", "COUNTERSIGN_TLS_KEY": "k.pem"}, "COUNTERSIGN_BASE_URL: \"http://localhost:8080\" must be an https:// origin"},
		{"a certificate and an https base URL load", map[string]string{"COUNTERSIGN_TLS_CERT": "c.pem", "COUNTERSIGN_TLS_KEY": "k.pem", "COUNTERSIGN_BASE_URL": "https://a.example"}, ""},
		{"ACME with files is refused", map[string]string{"COUNTERSIGN_ACME_DOMAIN": "a.example", "COUNTERSIGN_TLS_CERT": "c.pem", "COUNTERSIGN_TLS_KEY": "k.pem", "COUNTERSIGN_BASE_URL": "https://a.example"}, "COUNTERSIGN_ACME_DOMAIN: not together with COUNTERSIGN_TLS_CERT"},
		{"ACME for another name than the base URL's is refused", map[string]string{"COUNTERSIGN_ACME_DOMAIN": "a.example", "COUNTERSIGN_BASE_URL": "https://b.example"}, "COUNTERSIGN_BASE_URL must be https://a.example"},
		{"ACME with an http base URL is refused", map[string]string{"COUNTERSIGN_ACME_DOMAIN": "a.example", "COUNTERSIGN_BASE_URL": "http://a.example"}, "must be https://a.example"},
		{"ACME with a base URL on another port is refused", map[string]string{"COUNTERSIGN_ACME_DOMAIN": "a.example", "COUNTERSIGN_BASE_URL": "https://a.example:8443"}, "must be https://a.example"},
		{"ACME for an IP address is refused", map[string]string{"COUNTERSIGN_ACME_DOMAIN": "192.0.2.1", "COUNTERSIGN_BASE_URL": "https://192.0.2.1"}, "is not a host name"},
		{"ACME for a name with a path is refused", map[string]string{"COUNTERSIGN_ACME_DOMAIN": "a.example/x", "COUNTERSIGN_BASE_URL": "https://a.example"}, "is not a host name"},
		{"a redirect listener without TLS is refused", map[string]string{"COUNTERSIGN_HTTP_ADDR": ":80"}, "COUNTERSIGN_HTTP_ADDR: is the listener that redirects plain HTTP to HTTPS, so it needs TLS"},
		{"a redirect listener on the main address is refused", map[string]string{"COUNTERSIGN_ACME_DOMAIN": "a.example", "COUNTERSIGN_BASE_URL": "https://a.example", "COUNTERSIGN_ADDR": ":443", "COUNTERSIGN_HTTP_ADDR": ":443"}, "must differ from COUNTERSIGN_ADDR"},
		{"a redirect listener that is not host:port is refused", map[string]string{"COUNTERSIGN_TLS_CERT": "c.pem", "COUNTERSIGN_TLS_KEY": "k.pem", "COUNTERSIGN_BASE_URL": "https://a.example", "COUNTERSIGN_HTTP_ADDR": "80"}, "\"80\" is not host:port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadWith(tc.env)
			switch {
			case tc.refusal == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refusal != "" && (err == nil || !strings.Contains(err.Error(), tc.refusal)):
				t.Fatalf("error %v, want one containing %q", err, tc.refusal)
			}
		})
	}
}

func TestTheRedirectListenersAddress(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"plain HTTP has none", map[string]string{}, ""},
		{"ACME defaults to :80", map[string]string{"COUNTERSIGN_ACME_DOMAIN": "a.example", "COUNTERSIGN_BASE_URL": "https://a.example"}, ":80"},
		{"ACME with off has none", map[string]string{"COUNTERSIGN_ACME_DOMAIN": "a.example", "COUNTERSIGN_BASE_URL": "https://a.example", "COUNTERSIGN_HTTP_ADDR": "off"}, ""},
		{"files default to none", map[string]string{"COUNTERSIGN_TLS_CERT": "c.pem", "COUNTERSIGN_TLS_KEY": "k.pem", "COUNTERSIGN_BASE_URL": "https://a.example"}, ""},
		{"files with an address use it", map[string]string{"COUNTERSIGN_TLS_CERT": "c.pem", "COUNTERSIGN_TLS_KEY": "k.pem", "COUNTERSIGN_BASE_URL": "https://a.example", "COUNTERSIGN_HTTP_ADDR": "127.0.0.1:8081"}, "127.0.0.1:8081"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := loadWith(tc.env)
			if err != nil {
				t.Fatal(err)
			}
			if c.HTTPAddr != tc.want {
				t.Fatalf("HTTPAddr = %q, want %q", c.HTTPAddr, tc.want)
			}
		})
	}
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// writePair writes a self-signed certificate and its key as PEM files.
func writePair(t *testing.T, dir, name string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// A renewed certificate written over the files is served at the next
// handshake; a half-written pair leaves the previous one in use.
func TestCertificateFilesAreReadAgainWhenTheyChange(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := writePair(t, dir, "a.example")
	cfg, err := loadWith(map[string]string{"COUNTERSIGN_TLS_CERT": certFile, "COUNTERSIGN_TLS_KEY": keyFile, "COUNTERSIGN_BASE_URL": "https://a.example"})
	if err != nil {
		t.Fatal(err)
	}
	secure, err := NewTLS(cfg, nil, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	served := func() string {
		c, err := secure.Config.GetCertificate(&tls.ClientHelloInfo{ServerName: "a.example"})
		if err != nil {
			t.Fatal(err)
		}
		return c.Leaf.Subject.CommonName
	}
	if got := served(); got != "a.example" {
		t.Fatalf("served %q, want a.example", got)
	}
	// A renewal: both files replaced (a later mtime, whatever the file system's resolution).
	newCert, newKey := writePair(t, dir, "b.example")
	later := time.Now().Add(time.Minute)
	for _, f := range [][2]string{{newCert, certFile}, {newKey, keyFile}} {
		if err := os.Rename(f[0], f[1]); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(f[1], later, later); err != nil {
			t.Fatal(err)
		}
	}
	if got := served(); got != "b.example" {
		t.Fatalf("after the renewal served %q, want b.example", got)
	}
	// The certificate of a new pair written, its key not yet: b.example stays.
	halfCert, _ := writePair(t, dir, "c.example")
	if err := os.Rename(halfCert, certFile); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(certFile, later.Add(time.Minute), later.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := served(); got != "b.example" {
		t.Fatalf("with a mismatched pair on disk served %q, want the previous b.example", got)
	}
}
