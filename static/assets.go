package static

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"path"
	"strings"
	"sync"
)

// HashLength is how many hex digits of its content's SHA-256 an asset's
// hashed name carries (app.3f9a1c2b7d4e.js). web/build.mjs names the
// service worker's offline shell with the same rule.
const HashLength = 12

// Stable names keep their URL: the service worker (its URL is its scope
// and identity), the web app manifest (an installed app refers to it) and
// the offline page the worker caches. They never get a hashed name.
var stable = map[string]bool{"sw.js": true, "manifest.webmanifest": true, "offline.html": true}

// Asset is one file of the front end as the service serves it.
type Asset struct {
	Name    string // as in FS: "app.js", "icons/icon-192.png"
	Content []byte
	// Hashed is the name with the content's hash before the extension
	// ("app.3f9a1c2b7d4e.js"); "" for the stable names.
	Hashed string
}

// Path is the URL path pages use for the asset: its hashed name under
// /static/ when it has one.
func (a *Asset) Path() string {
	if a.Hashed == "" {
		return "/static/" + a.Name
	}
	return "/static/" + a.Hashed
}

// assets reads FS once: every file but the Go sources, with its hashed
// name. The offline page's references to other assets are rewritten to
// their hashed names, so that the page the worker caches asks for the
// files the worker cached with it.
var assets = sync.OnceValue(func() map[string]*Asset {
	all := map[string]*Asset{}
	_ = fs.WalkDir(FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".go") {
			return err
		}
		b, err := fs.ReadFile(FS, p)
		if err != nil {
			return err
		}
		a := &Asset{Name: p, Content: b}
		if !stable[p] {
			a.Hashed = hashedName(p, b)
		}
		all[p] = a
		return nil
	})
	if offline := all["offline.html"]; offline != nil {
		for _, a := range all {
			if a.Hashed != "" {
				offline.Content = bytes.ReplaceAll(offline.Content, []byte(`"/static/`+a.Name+`"`), []byte(`"`+a.Path()+`"`))
			}
		}
	}
	return all
})

// hashedName puts the first HashLength hex digits of the SHA-256 of
// content before the extension of name.
func hashedName(name string, content []byte) string {
	sum := sha256.Sum256(content)
	ext := path.Ext(name)
	return strings.TrimSuffix(name, ext) + "." + hex.EncodeToString(sum[:])[:HashLength] + ext
}

// Path is the URL path of the asset named name ("app.css"): its hashed
// name, which browsers may keep for good. A name that is not an asset
// gets its plain path, which a test of the pages catches.
func Path(name string) string {
	if a := assets()[name]; a != nil {
		return a.Path()
	}
	return "/static/" + name
}

// Lookup finds the asset a path under /static/ asks for. It answers the
// plain name ("app.js") and the hashed name of the current content, and
// also a hashed name of earlier content ("app.<other hash>.js"): a page
// loaded before a deploy may still ask for its bundle, and gets the
// current one rather than none. current is true only for the current
// hashed name, the one response that may be cached for good.
func Lookup(name string) (a *Asset, current bool) {
	all := assets()
	if a := all[name]; a != nil {
		return a, false
	}
	ext := path.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	dot := strings.LastIndexByte(stem, '.')
	if dot < 0 || !isHash(stem[dot+1:]) {
		return nil, false
	}
	a = all[stem[:dot]+ext]
	if a == nil || a.Hashed == "" {
		return nil, false
	}
	return a, a.Hashed == name
}

// isHash reports whether s has the form of a hashed name's hash.
func isHash(s string) bool {
	if len(s) != HashLength {
		return false
	}
	for _, r := range s {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}

// All is every asset, in no particular order.
func All() []*Asset {
	all := make([]*Asset, 0, len(assets()))
	for _, a := range assets() {
		all = append(all, a)
	}
	return all
}
