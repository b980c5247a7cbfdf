package app_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"io/fs"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/acme/autocert"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models"
)

const acmeDomain = "approvals.example.com"

// acmeConfig is an instance's configuration with ACME for acmeDomain.
func acmeConfig(t *testing.T, db apptest.Database) app.Config {
	t.Helper()
	return apptest.Config(t, db, map[string]string{"COUNTERSIGN_ACME_DOMAIN": "Approvals.Example.com", "COUNTERSIGN_BASE_URL": "https://" + acmeDomain})
}

// acmeInstance opens the store of cfg and builds its TLS as serve does.
func acmeInstance(t *testing.T, cfg app.Config) (*app.TLS, *models.Store) {
	t.Helper()
	store, err := app.OpenStore(context.Background(), cfg, apptest.Logger())
	if err != nil {
		t.Fatal(err)
	}
	if sqlDB, err := store.DB().DB(); err == nil {
		t.Cleanup(func() { sqlDB.Close() })
	}
	secure, err := app.NewTLS(cfg, store, apptest.Logger())
	if err != nil || secure == nil || secure.Manager == nil {
		t.Fatalf("NewTLS = %+v, %v; want a manager", secure, err)
	}
	return secure, store
}

// The ACME manager is built for the one domain and redirects plain HTTP to
// the base URL; it caches under the data folder on SQLite and in the
// database on PostgreSQL. Nothing reaches the network.
func TestTheACMEManagerServesOnlyItsDomain(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		cfg := acmeConfig(t, db)
		secure, store := acmeInstance(t, cfg)
		m := secure.Manager
		if err := m.HostPolicy(ctx, acmeDomain); err != nil {
			t.Errorf("the host policy refuses the domain: %v", err)
		}
		for _, other := range []string{"example.com", "evil.example.com", "approvals.example.com.evil.example", "localhost"} {
			if err := m.HostPolicy(ctx, other); err == nil {
				t.Errorf("the host policy allows %s", other)
			}
		}
		dirCache := filepath.Join(cfg.Data, app.ACMECacheDir)
		dir, isDir := m.Cache.(autocert.DirCache)
		switch db {
		case apptest.SQLite:
			if !isDir || string(dir) != dirCache {
				t.Errorf("cache = %#v, want DirCache %s", m.Cache, dirCache)
			}
		case apptest.Postgres:
			if isDir || m.Cache == nil {
				t.Fatalf("cache = %#v, want the database's", m.Cache)
			}
			if err := m.Cache.Put(ctx, "acme_account+key", []byte("key")); err != nil {
				t.Fatal(err)
			}
			var n int64
			if err := store.DB().Table("acme_cache").Where("name = ?", "acme_account+key").Count(&n).Error; err != nil || n != 1 {
				t.Errorf("acme_cache holds %d rows of the account key (%v), want 1", n, err)
			}
			if _, err := os.Stat(dirCache); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the data folder has %s (%v): on PostgreSQL the cache is the database's", dirCache, err)
			}
		}
		if m.Prompt == nil || !m.Prompt("https://letsencrypt.org/tos") {
			t.Errorf("the manager does not accept the terms of service: it would never get a certificate")
		}
		if !strings.Contains(strings.Join(secure.Config.NextProtos, ","), "acme-tls/1") {
			t.Errorf("NextProtos = %v, want acme-tls/1 for TLS-ALPN-01 challenges", secure.Config.NextProtos)
		}
		rec := httptest.NewRecorder()
		secure.Redirect.ServeHTTP(rec, httptest.NewRequest("GET", "http://approvals.example.com/inbox?x=1", nil))
		if rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != "https://approvals.example.com/inbox?x=1" {
			t.Errorf("plain HTTP answered %d to %q, want 301 to https://approvals.example.com/inbox?x=1", rec.Code, rec.Header().Get("Location"))
		}
	})
}

// The manager's cache keeps autocert's contract on either database: a
// missing name is autocert.ErrCacheMiss itself (autocert compares with ==),
// a put reads back, a second put replaces, a delete makes it missing again.
func TestTheACMECacheKeepsAutocertsContract(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		secure, _ := acmeInstance(t, acmeConfig(t, db))
		c := secure.Manager.Cache
		if got, err := c.Get(ctx, acmeDomain); err != autocert.ErrCacheMiss { //nolint:errorlint // autocert compares with ==
			t.Fatalf("a missing name: %q, %v; want autocert.ErrCacheMiss", got, err)
		}
		for _, data := range [][]byte{[]byte("first\x00\xff"), []byte("second")} {
			if err := c.Put(ctx, acmeDomain, data); err != nil {
				t.Fatal(err)
			}
			if got, err := c.Get(ctx, acmeDomain); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("read %q, %v; want %q", got, err, data)
			}
		}
		if err := c.Delete(ctx, acmeDomain); err != nil {
			t.Fatal(err)
		}
		if got, err := c.Get(ctx, acmeDomain); err != autocert.ErrCacheMiss { //nolint:errorlint // as above
			t.Fatalf("a deleted name: %q, %v; want autocert.ErrCacheMiss", got, err)
		}
		if err := c.Delete(ctx, acmeDomain); err != nil {
			t.Fatalf("deleting a missing name: %v", err)
		}
	})
}

// twoInstances are two instances on one PostgreSQL, each with its own data
// folder, as on two machines behind a load balancer.
func twoInstances(t *testing.T) (a, b *app.TLS) {
	t.Helper()
	if os.Getenv(apptest.PostgresEnv) == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not set: CI runs every test on PostgreSQL too", apptest.PostgresEnv)
		}
		t.Skipf("%s is not set", apptest.PostgresEnv)
	}
	cfgA := acmeConfig(t, apptest.Postgres)
	cfgB := cfgA
	cfgB.Data = t.TempDir()
	a, _ = acmeInstance(t, cfgA)
	b, _ = acmeInstance(t, cfgB)
	return a, b
}

// An HTTP-01 challenge that instance A started is answered by instance B
// when the load balancer sends Let's Encrypt's request there: autocert keeps
// the token in A's memory and in the Cache, and B's handler falls back to
// the Cache.
func TestAnInstanceAnswersAChallengeAnotherStarted(t *testing.T) {
	a, b := twoInstances(t)
	plainB := httptest.NewServer(b.Redirect)
	t.Cleanup(plainB.Close)
	const token, keyAuth = "evaGxfADs6pSRb2LAv9IZf17Dt3juxGJ-PCt92wr-oA", "evaGxfADs6pSRb2LAv9IZf17Dt3juxGJ-PCt92wr-oA.9jg46WB3rR_AHD-EBXdN7cBkH1WOu0tA3M9fm21mqTI"
	challenge := func() (int, string) {
		t.Helper()
		req, err := http.NewRequest("GET", plainB.URL+"/.well-known/acme-challenge/"+token, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = acmeDomain
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return res.StatusCode, string(body)
	}
	if code, _ := challenge(); code != http.StatusNotFound {
		t.Fatalf("an unknown token answered %d, want 404", code)
	}
	// What A's manager does when it accepts an HTTP-01 challenge
	// (golang.org/x/crypto v0.57.0, acme/autocert/autocert.go: putHTTPToken
	// stores the key authorization in the Cache under httpTokenCacheKey,
	// path.Base(tokenPath)+"+http-01", and httpToken reads that key when
	// the token is not in memory). The flow itself needs an ACME server.
	if err := a.Manager.Cache.Put(context.Background(), token+"+http-01", []byte(keyAuth)); err != nil {
		t.Fatal(err)
	}
	if code, body := challenge(); code != http.StatusOK || body != keyAuth {
		t.Fatalf("instance B answered A's challenge with %d %q, want 200 and the key authorization", code, body)
	}
	// deleteHTTPToken: once A's authorization is done, B no longer answers.
	if err := a.Manager.Cache.Delete(context.Background(), token+"+http-01"); err != nil {
		t.Fatal(err)
	}
	if code, _ := challenge(); code != http.StatusNotFound {
		t.Fatalf("after A deleted the token B answered %d, want 404", code)
	}
}

// The certificate instance A got is the one instance B serves: B reads it
// from the shared cache at its first handshake instead of asking Let's
// Encrypt for one of its own.
func TestInstancesOnOnePostgreSQLServeOneCertificate(t *testing.T) {
	a, b := twoInstances(t)
	// What autocert's cachePut writes for an ECDSA certificate under the
	// domain's name: the private key, then the chain, as PEM.
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: acmeDomain}, DNSNames: []string{acmeDomain},
		// Far from its end: autocert renews 30 days before, and a renewal would reach for the network.
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(80 * 24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ec, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	entry := append(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: ec}), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	if err := a.Manager.Cache.Put(context.Background(), acmeDomain, entry); err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", b.Config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			_ = conn.(*tls.Conn).Handshake()
			conn.Close()
		}
	}()
	roots := x509.NewCertPool()
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	roots.AddCert(leaf)
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 30 * time.Second}, "tcp", ln.Addr().String(), &tls.Config{ServerName: acmeDomain, RootCAs: roots})
	if err != nil {
		t.Fatalf("a handshake with instance B: %v (it does not serve A's certificate)", err)
	}
	defer conn.Close()
	if got := conn.ConnectionState().PeerCertificates[0]; !bytes.Equal(got.Raw, der) {
		t.Fatalf("instance B served %s, want the certificate A put in the cache", got.Subject)
	}
}
