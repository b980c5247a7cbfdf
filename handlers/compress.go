package handlers

import (
	"bytes"
	"compress/gzip"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"
)

const gzipEncoding = "gzip"

// compressMinSize is the smallest body worth gzipping: below it, gzip's
// header and trailer and the work of both ends cost more than they save.
const compressMinSize = 1024

// compressible reports whether a body of this Content-Type is worth
// gzipping: pages, scripts, styles and JSON. Images and fonts are
// compressed already. An event stream is not: its events must reach the
// browser as they are written, never held for a compressor.
func compressible(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	switch mt {
	case "text/html", "text/css", "text/javascript", "application/javascript", "text/plain",
		"application/json", "application/manifest+json", "image/svg+xml":
		return true
	}
	return strings.HasSuffix(mt, "+json")
}

// acceptsGzip reports whether an Accept-Encoding header accepts gzip: named
// (or as *) with a quality above zero.
func acceptsGzip(header string) bool {
	star := false
	for _, part := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		coding = strings.ToLower(strings.TrimSpace(coding))
		if coding != gzipEncoding && coding != "*" {
			continue
		}
		ok := true
		for _, p := range strings.Split(params, ";") {
			if k, v, found := strings.Cut(strings.TrimSpace(p), "="); found && strings.EqualFold(strings.TrimSpace(k), "q") {
				q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				ok = err == nil && q > 0
			}
		}
		if coding == gzipEncoding {
			return ok // gzip named outright decides, whatever * says
		}
		star = ok
	}
	return star
}

// crossSite reports whether a browser says (Fetch Metadata) that another
// site's page sent the request. Its answer goes out uncompressed: a page
// that shows request input (a query string) beside a secret (the
// session's CSRF token) would otherwise let a site that makes the browser
// send many requests, and sees their sizes on the network, learn the
// secret a character at a time from how well each answer compresses
// (BREACH). The service's own pages, a typed address, a bookmark or a
// notification send same-origin or none, and get gzip. A browser without
// Fetch Metadata (Safari before 16.4) is not told apart.
func crossSite(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "cross-site", "same-site":
		return true
	}
	return false
}

var gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(io.Discard) }}

// gzipBytes is b gzipped at the best level, for bodies made once and sent
// many times (the front end's files).
func gzipBytes(b []byte) ([]byte, error) {
	var out bytes.Buffer
	w, err := gzip.NewWriterLevel(&out, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(b); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// compressResponses gzips the pages, JSON and other text a handler writes
// when the client accepts gzip and the body is at least compressMinSize.
// Echo's Gzip middleware decides before the handler runs, so it would
// compress images and hold event streams in a compressor; this one decides
// when the handler has set its Content-Type: a type that is not
// compressible (an event stream: the live timeline and every MCP answer;
// an image) or a body already encoded (the precompressed front end) passes
// through untouched, flushes included. An answer to a request another
// site's page made the browser send is never compressed (see crossSite).
func compressResponses(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		req := c.Request()
		res := c.Response()
		res.Header().Add(echo.HeaderVary, echo.HeaderAcceptEncoding+", Sec-Fetch-Site")
		if req.Method == http.MethodHead || crossSite(req) || !acceptsGzip(req.Header.Get(echo.HeaderAcceptEncoding)) {
			return next(c)
		}
		w := &gzipResponseWriter{ResponseWriter: res.Writer}
		res.Writer = w
		defer func() {
			if w.status == 0 && !w.decided {
				// Nothing written: the error handler writes its page
				// after this returns (or after a panic is recovered),
				// straight to the client.
				res.Writer = w.ResponseWriter
				return
			}
			if ferr := w.finish(); err == nil {
				err = ferr
			}
		}()
		return next(c)
	}
}

// gzipResponseWriter holds a compressible response's status and first
// bytes until it knows whether the body reaches compressMinSize (or the
// handler flushes), then sends it gzipped; anything else goes straight
// through.
type gzipResponseWriter struct {
	http.ResponseWriter
	status  int // held: the header is not sent yet
	held    []byte
	decided bool // the header is sent, gzipped (gz != nil) or not
	gz      *gzip.Writer
}

func (w *gzipResponseWriter) WriteHeader(code int) {
	if w.decided || w.status != 0 {
		return
	}
	h := w.Header()
	if code < http.StatusOK || code == http.StatusNoContent || code == http.StatusNotModified ||
		h.Get(echo.HeaderContentEncoding) != "" || !compressible(h.Get(echo.HeaderContentType)) || shortBody(h) {
		w.decided = true
		w.ResponseWriter.WriteHeader(code)
		return
	}
	w.status = code
}

// shortBody reports whether the handler declared a length under compressMinSize.
func shortBody(h http.Header) bool {
	n, err := strconv.Atoi(h.Get(echo.HeaderContentLength))
	return err == nil && n < compressMinSize
}

func (w *gzipResponseWriter) Write(b []byte) (int, error) {
	if !w.decided && w.status == 0 {
		if w.Header().Get(echo.HeaderContentType) == "" {
			w.Header().Set(echo.HeaderContentType, http.DetectContentType(b))
		}
		w.WriteHeader(http.StatusOK)
	}
	if w.decided {
		if w.gz != nil {
			return w.gz.Write(b)
		}
		return w.ResponseWriter.Write(b)
	}
	w.held = append(w.held, b...)
	if len(w.held) >= compressMinSize {
		if err := w.startGzip(); err != nil {
			return 0, err
		}
	}
	return len(b), nil
}

// startGzip sends the held header as a gzipped response, then the held bytes.
func (w *gzipResponseWriter) startGzip() error {
	h := w.Header()
	h.Set(echo.HeaderContentEncoding, gzipEncoding)
	h.Del(echo.HeaderContentLength)
	if tag := h.Get("ETag"); tag != "" && !strings.HasPrefix(tag, "W/") {
		h.Set("ETag", "W/"+tag) // the same content, not the same bytes
	}
	w.ResponseWriter.WriteHeader(w.status)
	w.decided = true
	w.gz = gzipWriters.Get().(*gzip.Writer)
	w.gz.Reset(w.ResponseWriter)
	_, err := w.gz.Write(w.held)
	w.held = nil
	return err
}

// Flush sends what was written so far: a handler that flushes a
// compressible body streams it, so it is gzipped from here on whatever
// its length.
func (w *gzipResponseWriter) Flush() {
	if !w.decided && w.status == 0 {
		w.WriteHeader(http.StatusOK) // flushed before a byte: the header goes now
	}
	if !w.decided {
		_ = w.startGzip()
	}
	if w.gz != nil {
		_ = w.gz.Flush()
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *gzipResponseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish ends the response: a held short body goes out as it is, a gzipped
// one gets its trailer.
func (w *gzipResponseWriter) finish() error {
	if w.gz != nil {
		err := w.gz.Close()
		w.gz.Reset(io.Discard)
		gzipWriters.Put(w.gz)
		w.gz = nil
		return err
	}
	if !w.decided {
		w.decided = true
		w.ResponseWriter.WriteHeader(w.status)
		_, err := w.ResponseWriter.Write(w.held)
		return err
	}
	return nil
}
