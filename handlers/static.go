package handlers

import (
	"crypto/sha256"
	"encoding/hex"
	"mime"
	"net/http"
	"path"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/static"
)

// How long a browser keeps what it fetched from /static/. A hashed name
// (app.3f9a1c2b7d4e.js) names one content forever: it is kept a year and
// never asked for again. Everything else (plain names, a hashed name of
// earlier content, the service worker, the manifest) is asked for again
// each time, answered 304 while its ETag still holds.
const (
	cacheForever    = "public, max-age=31536000, immutable"
	cacheRevalidate = "no-cache"
)

// servedAsset is one file of the front end, ready to serve: its type, its
// ETag, and its gzip form when that is smaller.
type servedAsset struct {
	*static.Asset
	contentType string
	etag        string
	gzipped     []byte // nil: sent as it is
	gzipTag     string
}

// staticRoutes serves the embedded front end. The service worker and the
// manifest live at the root, so the worker's scope is the whole app.
// Scripts, styles, the manifest and the offline page are gzipped once, at
// start, at the best level, and sent so to a client that accepts gzip.
func (h *Handlers) staticRoutes(e *echo.Echo) {
	served := map[*static.Asset]*servedAsset{}
	for _, a := range static.All() {
		sum := sha256.Sum256(a.Content)
		tag := hex.EncodeToString(sum[:8])
		s := &servedAsset{Asset: a, contentType: assetType(a.Name), etag: `"` + tag + `"`}
		if compressible(s.contentType) {
			if gz, err := gzipBytes(a.Content); err == nil && len(gz) < len(a.Content) {
				s.gzipped, s.gzipTag = gz, `"`+tag+`-gzip"`
			}
		}
		served[a] = s
	}
	serve := func(name string, c echo.Context) error {
		a, current := static.Lookup(name)
		if a == nil {
			return echo.NewHTTPError(http.StatusNotFound, "no such file")
		}
		s := served[a]
		res := c.Response()
		body, tag := s.Content, s.etag
		// compressResponses has said that the answer varies with Accept-Encoding.
		if s.gzipped != nil && acceptsGzip(c.Request().Header.Get(echo.HeaderAcceptEncoding)) {
			body, tag = s.gzipped, s.gzipTag
			res.Header().Set(echo.HeaderContentEncoding, gzipEncoding)
		}
		res.Header().Set("ETag", tag)
		if current {
			res.Header().Set("Cache-Control", cacheForever)
		} else {
			res.Header().Set("Cache-Control", cacheRevalidate)
		}
		if c.Request().Header.Get("If-None-Match") == tag {
			res.Header().Del(echo.HeaderContentEncoding)
			return c.NoContent(http.StatusNotModified)
		}
		return c.Blob(http.StatusOK, s.contentType, body)
	}
	getOrHead := []string{http.MethodGet, http.MethodHead}
	e.Match(getOrHead, "/static/*", func(c echo.Context) error { return serve(path.Clean(c.Param("*")), c) })
	e.Match(getOrHead, "/sw.js", func(c echo.Context) error {
		c.Response().Header().Set("Service-Worker-Allowed", "/")
		return serve("sw.js", c)
	})
	e.Match(getOrHead, "/manifest.webmanifest", func(c echo.Context) error { return serve("manifest.webmanifest", c) })
	e.Match(getOrHead, "/offline.html", func(c echo.Context) error { return serve("offline.html", c) })
	// Pages name their icon, but browsers, bookmarks and feed readers still
	// ask for /favicon.ico; a PNG there is read by all of them.
	e.Match(getOrHead, "/favicon.ico", func(c echo.Context) error { return serve("icons/icon-192.png", c) })
}

// assetType is the Content-Type of a front-end file, by its extension.
func assetType(name string) string {
	switch ext := path.Ext(name); ext {
	case ".webmanifest":
		return "application/manifest+json"
	case ".js":
		return "text/javascript; charset=utf-8"
	default:
		if t := mime.TypeByExtension(ext); t != "" {
			return t
		}
		return echo.MIMEOctetStream
	}
}
