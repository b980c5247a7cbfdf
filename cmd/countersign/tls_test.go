package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
)

// selfSigned writes a self-signed certificate for localhost and 127.0.0.1
// and its key as PEM files in dir.
func selfSigned(t *testing.T, dir, name string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
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

// trusting is a client that trusts the certificate in certFile alone and
// follows no redirect.
func trusting(t *testing.T, certFile string) *http.Client {
	t.Helper()
	pemBytes, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pemBytes) {
		t.Fatalf("no certificate in %s", certFile)
	}
	return &http.Client{
		Timeout:       30 * time.Second,
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

var redirecting = regexp.MustCompile(`msg="redirecting http to https" addr=(\S+)`)

func TestServeAnswersHTTPSWithItsOwnCertificate(t *testing.T) {
	certFile, keyFile := selfSigned(t, t.TempDir(), "countersign-test")
	s := startServer(t, apptest.SQLite, map[string]string{
		"COUNTERSIGN_TLS_CERT": certFile, "COUNTERSIGN_TLS_KEY": keyFile,
		"COUNTERSIGN_BASE_URL": "https://localhost", "COUNTERSIGN_HTTP_ADDR": "127.0.0.1:0",
	})
	if !strings.HasPrefix(s.URL, "https://") {
		t.Fatalf("serve listens at %s, want https", s.URL)
	}
	res, err := s.client.Get(s.URL + "/readyz")
	if err != nil {
		t.Fatalf("GET /readyz over https: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("/readyz over https = %d, want 200", res.StatusCode)
	}
	if res.TLS == nil || res.TLS.PeerCertificates[0].Subject.CommonName != "countersign-test" {
		t.Errorf("the connection's certificate is not the one in COUNTERSIGN_TLS_CERT: %+v", res.TLS)
	}
	if res.ProtoMajor != 2 {
		t.Errorf("protocol %s, want HTTP/2 over TLS", res.Proto)
	}
	if hsts := res.Header.Get("Strict-Transport-Security"); !strings.HasPrefix(hsts, "max-age=") {
		t.Errorf("Strict-Transport-Security = %q, want max-age=…", hsts)
	}
	// A client that does not trust the certificate is refused: it is TLS, with that certificate.
	if _, err := http.Get(s.URL + "/healthz"); err == nil || !errors.As(err, new(*tls.CertificateVerificationError)) {
		t.Errorf("a client without the certificate got %v, want a certificate verification error", err)
	}
	// Plain HTTP on the TLS port is not served.
	if res, err := http.Get("http" + strings.TrimPrefix(s.URL, "https") + "/healthz"); err == nil {
		res.Body.Close()
		if res.StatusCode == http.StatusOK {
			t.Errorf("plain HTTP on the TLS port answered 200")
		}
	}

	// The redirect listener sends plain HTTP to the base URL.
	m := redirecting.FindStringSubmatch(s.log.String())
	if m == nil {
		t.Fatalf("no redirect listener was logged\n%s", s.log)
	}
	res, err = s.client.Get("http://" + m[1] + "/inbox?filter=mine")
	if err != nil {
		t.Fatalf("GET over plain HTTP: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMovedPermanently || res.Header.Get("Location") != "https://localhost/inbox?filter=mine" {
		t.Errorf("plain HTTP answered %d to %q, want 301 to https://localhost/inbox?filter=mine", res.StatusCode, res.Header.Get("Location"))
	}
	if err := s.stop(t); err != nil {
		t.Errorf("serve exited with %v after SIGTERM, want 0", err)
	}
}

func TestBadTLSSettingsStopTheStart(t *testing.T) {
	dir := t.TempDir()
	certA, keyA := selfSigned(t, dir, "a")
	_, keyB := selfSigned(t, dir, "b")
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.key")
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"a key file that is not there", map[string]string{"COUNTERSIGN_TLS_CERT": certA, "COUNTERSIGN_TLS_KEY": missing}, "COUNTERSIGN_TLS_KEY: cannot read " + missing},
		{"a certificate and another's key", map[string]string{"COUNTERSIGN_TLS_CERT": certA, "COUNTERSIGN_TLS_KEY": keyB}, "are not a PEM certificate and its private key"},
		{"a certificate file that is not PEM", map[string]string{"COUNTERSIGN_TLS_CERT": notPEM, "COUNTERSIGN_TLS_KEY": keyA}, "are not a PEM certificate and its private key"},
		{"a certificate without a key", map[string]string{"COUNTERSIGN_TLS_CERT": certA}, "set both (PEM files) or neither"},
		{"ACME and files", map[string]string{"COUNTERSIGN_TLS_CERT": certA, "COUNTERSIGN_TLS_KEY": keyA, "COUNTERSIGN_ACME_DOMAIN": "localhost.example"}, "COUNTERSIGN_ACME_DOMAIN: not together"},
		{"ACME for another name than the base URL's", map[string]string{"COUNTERSIGN_ACME_DOMAIN": "approvals.example.com", "COUNTERSIGN_BASE_URL": "https://localhost"}, "COUNTERSIGN_BASE_URL must be https://approvals.example.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := t.TempDir()
			env := map[string]string{"COUNTERSIGN_DATA": data, "COUNTERSIGN_ADDR": "127.0.0.1:0", "COUNTERSIGN_BASE_URL": "https://localhost"}
			for k, v := range tc.env {
				env[k] = v
			}
			r := cli(t, env, "serve")
			if r.code != 1 || !strings.Contains(r.stderr, "configuration:") || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("serve:\n%s\nwant exit 1 with a configuration error containing %q", r, tc.want)
			}
			if _, err := os.Stat(filepath.Join(data, "countersign.db")); err == nil {
				t.Errorf("the refused start made a database")
			}
		})
	}
}
