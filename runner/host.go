// Package runner is the runner host: the process that executes pinned runs
// once each, only after it has itself checked the person's device signature
// against keys it pinned, the payload's hash, the expiry, the script's path
// and its SHA-256. It talks to the service over MCP with a runner token and
// signs every report with its own Ed25519 key. It imports no server package
// but proof, so that a runner host trusts nothing the server says.
package runner

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/countersign/countersign/proof"
)

// Files in a runner's folder.
const (
	KeyFile     = "runner.key"   // the Ed25519 private key, PKCS#8 PEM, mode 0600
	ConfigFile  = "runner.json"  // the approved scripts folder
	TrustedFile = "trusted.json" // the pinned device keys, a countersign keys export
	JournalDir  = "journal"      // one file per claimed run
)

// config is runner.json.
type config struct {
	Scripts string `json:"scripts"`
}

// Init makes dir if needed, an Ed25519 key pair in dir/runner.key (kept when
// it is there already, so a second init never replaces an enrolled key) and
// records the approved scripts folder (default dir/scripts). It returns the
// public key as the unpadded base64url of its 32 bytes.
func Init(dir, scripts string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("make %s: %w", dir, err)
	}
	if scripts == "" {
		scripts = filepath.Join(dir, "scripts")
	}
	scripts, err := filepath.Abs(scripts)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(scripts, 0o755); err != nil {
		return "", fmt.Errorf("make the scripts folder %s: %w", scripts, err)
	}
	keyPath := filepath.Join(dir, KeyFile)
	key, err := readKey(keyPath)
	if errors.Is(err, os.ErrNotExist) {
		_, key, err = ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return "", err
		}
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return "", err
		}
		f, err := os.OpenFile(keyPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return "", fmt.Errorf("write %s: %w", keyPath, err)
		}
		if err := pem.Encode(f, &pem.Block{Type: "PRIVATE KEY", Bytes: der}); err != nil {
			f.Close()
			return "", fmt.Errorf("write %s: %w", keyPath, err)
		}
		if err := f.Close(); err != nil {
			return "", fmt.Errorf("write %s: %w", keyPath, err)
		}
	} else if err != nil {
		return "", err
	}
	cfg, err := json.MarshalIndent(config{Scripts: scripts}, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), append(cfg, '\n'), 0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", ConfigFile, err)
	}
	return PublicKey(key), nil
}

// PublicKey writes a runner's public key as the unpadded base64url of its 32 bytes.
func PublicKey(key ed25519.PrivateKey) string {
	return base64.RawURLEncoding.EncodeToString(key.Public().(ed25519.PublicKey))
}

func readKey(path string) (ed25519.PrivateKey, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(raw)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("%s is not a PEM private key", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	key, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s is not an Ed25519 key", path)
	}
	return key, nil
}

// TrustChange is what a trust call changed: the credential ids (base64url)
// it pinned and unpinned, with the person each belongs to.
type TrustChange struct {
	First   bool
	Added   []string
	Removed []string
}

// Trust pins the device keys of a key export (countersign keys export) in
// dir: the keys it lists that are not removed become the only ones the
// runner accepts a decision from. The first call pins them; a later one
// replaces the pinned set and says what it added and removed. Nothing else
// changes the pinned keys.
func Trust(dir string, export []byte) (*TrustChange, error) {
	keys, err := proof.ParseKeys(export)
	if err != nil {
		return nil, fmt.Errorf("not a key export (countersign keys export): %w", err)
	}
	if keys.Format != proof.KeysFormat {
		return nil, fmt.Errorf("the key export's format is %q, want %q", keys.Format, proof.KeysFormat)
	}
	keys.Keys = slices.DeleteFunc(keys.Keys, func(k proof.DeviceKey) bool { return k.Removed })
	if len(keys.Keys) == 0 {
		return nil, errors.New("the key export lists no device key in use: nothing to pin")
	}
	path := filepath.Join(dir, TrustedFile)
	change := &TrustChange{}
	old, err := LoadTrusted(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		change.First = true
		old = &proof.Keys{}
	case err != nil:
		return nil, err
	}
	describe := func(k proof.DeviceKey) string {
		return fmt.Sprintf("%s (%s, %q)", base64.RawURLEncoding.EncodeToString(k.CredentialID), k.Person, k.Name)
	}
	has := func(list []proof.DeviceKey, k proof.DeviceKey) bool {
		return slices.ContainsFunc(list, func(o proof.DeviceKey) bool {
			return bytes.Equal(o.CredentialID, k.CredentialID) && bytes.Equal(o.PublicKey, k.PublicKey)
		})
	}
	for _, k := range keys.Keys {
		if !has(old.Keys, k) {
			change.Added = append(change.Added, describe(k))
		}
	}
	for _, k := range old.Keys {
		if !has(keys.Keys, k) {
			change.Removed = append(change.Removed, describe(k))
		}
	}
	out, err := json.MarshalIndent(keys, "", "  ")
	if err != nil {
		return nil, err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(out, '\n'), 0o600); err != nil {
		return nil, fmt.Errorf("pin the keys: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("pin the keys: %w", err)
	}
	return change, nil
}

// LoadTrusted reads the pinned device keys of dir.
func LoadTrusted(dir string) (*proof.Keys, error) {
	raw, err := os.ReadFile(filepath.Join(dir, TrustedFile))
	if err != nil {
		return nil, err
	}
	keys, err := proof.ParseKeys(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", TrustedFile, err)
	}
	return keys, nil
}

// Host is a runner's folder, loaded: its key, its scripts folder and the
// device keys it pinned.
type Host struct {
	Dir     string
	Key     ed25519.PrivateKey
	Scripts string // absolute
	Trusted *proof.Keys
}

// Load reads a runner's folder. It refuses a folder with no pinned key: a
// runner that trusts no device key must not start.
func Load(dir string) (*Host, error) {
	key, err := readKey(filepath.Join(dir, KeyFile))
	if err != nil {
		return nil, fmt.Errorf("read the runner's key (run countersign runner init first): %w", err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	if err != nil {
		return nil, fmt.Errorf("read %s (run countersign runner init first): %w", ConfigFile, err)
	}
	var cfg config
	if err := json.Unmarshal(raw, &cfg); err != nil || cfg.Scripts == "" {
		return nil, fmt.Errorf("%s names no scripts folder", ConfigFile)
	}
	trusted, err := LoadTrusted(dir)
	if errors.Is(err, os.ErrNotExist) || err == nil && len(trusted.Keys) == 0 {
		return nil, errors.New("no device key is pinned: run countersign runner trust --dir DIR --keys KEYS.json with the output of countersign keys export")
	}
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, JournalDir), 0o700); err != nil {
		return nil, fmt.Errorf("make the journal: %w", err)
	}
	return &Host{Dir: dir, Key: key, Scripts: cfg.Scripts, Trusted: trusted}, nil
}

// PublicKey is the host's public key as enrolled.
func (h *Host) PublicKey() string { return PublicKey(h.Key) }
