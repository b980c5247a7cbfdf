package browsertest

import (
	"slices"
	"testing"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/static"
)

// The service worker installs its offline shell under the names the pages
// use, the style sheet's and the script's hashed ones (an install that
// asked for a missing file would fail and cache nothing), and the offline
// page it falls back to is styled by the style sheet it cached.
func TestTheServiceWorkerCachesTheOfflineShellUnderHashedNames(t *testing.T) {
	s := start(t, apptest.SQLite)
	p := s.page
	p.Go("/signin")
	cached := evalAwait[[]string](p, `navigator.serviceWorker.ready
		.then(() => caches.keys())
		.then(keys => Promise.all(keys.map(k => caches.open(k).then(c => c.keys()))))
		.then(all => all.flat().map(r => new URL(r.url).pathname))`)
	for _, want := range []string{"/offline.html", static.Path("app.css"), static.Path("app.js"), "/manifest.webmanifest"} {
		if !slices.Contains(cached, want) {
			t.Errorf("the service worker's cache lacks %s: %q", want, cached)
		}
	}
	p.Go("/offline.html")
	sheet := Eval[struct {
		Href  string `json:"href"`
		Rules int    `json:"rules"`
	}](p, `(() => { const s = document.styleSheets[0]; return { href: s ? new URL(s.href).pathname : "", rules: s ? s.cssRules.length : 0 }; })()`)
	if sheet.Href != static.Path("app.css") || sheet.Rules == 0 {
		t.Errorf("the offline page's style sheet is %q with %d rules, want %s", sheet.Href, sheet.Rules, static.Path("app.css"))
	}
}
