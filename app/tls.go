package app

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"golang.org/x/crypto/acme/autocert"

	"github.com/countersign/countersign/models"
)

// TLS is how serve answers HTTPS when it ends TLS itself
// (COUNTERSIGN_TLS_CERT and _KEY, or COUNTERSIGN_ACME_DOMAIN).
type TLS struct {
	// Config is the main listener's: its certificates come from the files
	// or from the ACME manager.
	Config *tls.Config
	// Redirect serves the plain-HTTP listener (COUNTERSIGN_HTTP_ADDR): a 301
	// to the same path under the base URL and, with ACME, the HTTP-01
	// challenges.
	Redirect http.Handler
	// Manager gets and renews the certificate with ACME; nil with files.
	Manager *autocert.Manager
}

// ACMECacheDir is the folder under COUNTERSIGN_DATA where, on SQLite, the
// ACME account key and certificates are kept across restarts. On PostgreSQL
// they are in the database (see sharedACMECache).
const ACMECacheDir = "acme"

// NewTLS builds the TLS setup cfg asks for, or returns nil when serve
// answers plain HTTP. The certificate files are read and matched here, at
// start, so a missing, unreadable or mismatched pair stops the start with
// the setting's name. With ACME nothing is fetched until the first handshake;
// store decides where the manager keeps its cache (see acmeCache), and may be
// nil with certificate files.
func NewTLS(cfg Config, store *models.Store, log *slog.Logger) (*TLS, error) {
	redirect := redirectTo(cfg.BaseURL)
	switch {
	case cfg.TLSCert != "":
		pair := &certFiles{cert: cfg.TLSCert, key: cfg.TLSKey, log: log}
		if err := pair.load(); err != nil {
			return nil, err
		}
		if leaf := pair.pair.Leaf; time.Now().After(leaf.NotAfter) {
			log.Warn("the TLS certificate has expired: browsers will refuse it", "cert", cfg.TLSCert, "not_after", leaf.NotAfter)
		}
		return &TLS{Config: &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: pair.get}, Redirect: redirect}, nil
	case cfg.ACMEDomain != "":
		if store == nil {
			return nil, errors.New("COUNTERSIGN_ACME_DOMAIN: the ACME manager needs the store for its cache")
		}
		m := &autocert.Manager{
			Prompt:     autocert.AcceptTOS,
			HostPolicy: autocert.HostWhitelist(cfg.ACMEDomain),
			Cache:      acmeCache(cfg, store),
		}
		c := m.TLSConfig()
		c.MinVersion = tls.VersionTLS12
		return &TLS{Config: c, Redirect: m.HTTPHandler(redirect), Manager: m}, nil
	}
	return nil, nil
}

// redirectTo sends every request to the same path and query under base. The
// host is the base URL's, never the request's Host header.
func redirectTo(base string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, base+r.URL.RequestURI(), http.StatusMovedPermanently)
	})
}

// certFiles is a certificate and key read from PEM files, read again at a
// handshake when either file has changed, so that a renewed certificate is
// served without a restart. A pair that fails to load then (say the
// certificate is written and the key not yet) leaves the previous pair in use.
type certFiles struct {
	cert, key string
	log       *slog.Logger

	mu               sync.Mutex
	pair             *tls.Certificate
	certMod, keyMod  time.Time
	lastFailedReload time.Time
}

// load reads and checks the pair; its errors name the setting at fault.
func (f *certFiles) load() error {
	certMod, err := modTime("COUNTERSIGN_TLS_CERT", f.cert)
	if err != nil {
		return err
	}
	keyMod, err := modTime("COUNTERSIGN_TLS_KEY", f.key)
	if err != nil {
		return err
	}
	pair, err := tls.LoadX509KeyPair(f.cert, f.key)
	if err != nil {
		return fmt.Errorf("COUNTERSIGN_TLS_CERT and COUNTERSIGN_TLS_KEY: %s and %s are not a PEM certificate and its private key: %w", f.cert, f.key, err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return fmt.Errorf("COUNTERSIGN_TLS_CERT: %s: %w", f.cert, err)
	}
	pair.Leaf = leaf
	f.mu.Lock()
	f.pair, f.certMod, f.keyMod = &pair, certMod, keyMod
	f.mu.Unlock()
	return nil
}

// modTime checks that a file of a setting can be read, and returns when it
// last changed.
func modTime(setting, path string) (time.Time, error) {
	file, err := os.Open(path)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: cannot read %s: %w", setting, path, err)
	}
	info, err := file.Stat()
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %s: %w", setting, path, err)
	}
	return info.ModTime(), nil
}

// get is the listener's GetCertificate.
func (f *certFiles) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	f.mu.Lock()
	pair, certMod, keyMod, lastFailed := f.pair, f.certMod, f.keyMod, f.lastFailedReload
	f.mu.Unlock()
	ci, cerr := os.Stat(f.cert)
	ki, kerr := os.Stat(f.key)
	changed := cerr == nil && kerr == nil && (!ci.ModTime().Equal(certMod) || !ki.ModTime().Equal(keyMod))
	if !changed || time.Since(lastFailed) < 10*time.Second {
		return pair, nil
	}
	if err := f.load(); err != nil {
		f.mu.Lock()
		f.lastFailedReload = time.Now()
		f.mu.Unlock()
		f.log.Error("reload the TLS certificate; the previous one stays in use", "err", err)
		return pair, nil
	}
	f.log.Info("TLS certificate reloaded", "cert", f.cert)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pair, nil
}
