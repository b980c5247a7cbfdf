package handlers

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/static"
)

// staticRoutes serves the embedded front end. The service worker and the
// manifest live at the root, so the worker's scope is the whole app.
func (h *Handlers) staticRoutes(e *echo.Echo) {
	etags := map[string]string{}
	_ = fs.WalkDir(static.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := fs.ReadFile(static.FS, p)
			sum := sha256.Sum256(b)
			etags[p] = `"` + hex.EncodeToString(sum[:8]) + `"`
		}
		return nil
	})
	serve := func(name string, c echo.Context) error {
		tag, ok := etags[name]
		if !ok || strings.HasSuffix(name, ".go") {
			return echo.NewHTTPError(http.StatusNotFound, "no such file")
		}
		res := c.Response()
		res.Header().Set("ETag", tag)
		res.Header().Set("Cache-Control", "no-cache")
		if c.Request().Header.Get("If-None-Match") == tag {
			return c.NoContent(http.StatusNotModified)
		}
		b, err := fs.ReadFile(static.FS, name)
		if err != nil {
			return err
		}
		ctype := mime.TypeByExtension(path.Ext(name))
		switch path.Ext(name) {
		case ".webmanifest":
			ctype = "application/manifest+json"
		case ".js":
			ctype = "text/javascript; charset=utf-8"
		}
		return c.Blob(http.StatusOK, ctype, b)
	}
	getOrHead := []string{http.MethodGet, http.MethodHead}
	e.Match(getOrHead, "/static/*", func(c echo.Context) error { return serve(path.Clean(c.Param("*")), c) })
	e.Match(getOrHead, "/sw.js", func(c echo.Context) error {
		c.Response().Header().Set("Service-Worker-Allowed", "/")
		return serve("sw.js", c)
	})
	e.Match(getOrHead, "/manifest.webmanifest", func(c echo.Context) error { return serve("manifest.webmanifest", c) })
	e.Match(getOrHead, "/offline.html", func(c echo.Context) error { return serve("offline.html", c) })
}
