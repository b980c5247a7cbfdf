package handlers_test

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/countersign/countersign/handlers"
)

// The compressor with handlers the service does not have yet: a page
// streamed in parts (each flushed part reaches the browser gzipped while
// the handler waits), one flushed before its first byte, a handler that
// fails before writing and one that panics (their error pages reach the
// browser whole).
func TestTheCompressorPassesFlushesAndErrors(t *testing.T) {
	e := echo.New()
	e.Logger.SetOutput(io.Discard) // the recovered panic's stack
	e.Use(middleware.Recover(), handlers.CompressResponses)
	firstRead := make(chan struct{})
	first := "<!doctype html><p>" + strings.Repeat("first part ", 10) + "</p>"
	e.GET("/stream", func(c echo.Context) error {
		res := c.Response()
		res.Header().Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
		if _, err := res.Write([]byte(first)); err != nil {
			return err
		}
		res.Flush()
		select {
		case <-firstRead:
		case <-time.After(10 * time.Second):
			return errors.New("the first part was not read")
		}
		_, err := res.Write([]byte("<p>second part</p>"))
		return err
	})
	page := "<!doctype html><p>" + strings.Repeat("a page flushed before its first byte ", 60) + "</p>"
	e.GET("/flushes-first", func(c echo.Context) error {
		res := c.Response()
		res.Header().Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
		res.Flush()
		_, err := res.Write([]byte(page))
		return err
	})
	e.GET("/fails", func(echo.Context) error { return echo.NewHTTPError(http.StatusTeapot, strings.Repeat("no tea ", 300)) })
	e.GET("/panics", func(echo.Context) error { panic("boom") })
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)

	t.Run("a flushed part of a page arrives gzipped before the rest is written", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/stream", nil)
		req.Header.Set("Accept-Encoding", "gzip")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if enc := res.Header.Get("Content-Encoding"); enc != "gzip" {
			t.Fatalf("Content-Encoding %q, want gzip", enc)
		}
		zr, err := gzip.NewReader(bufio.NewReader(res.Body))
		if err != nil {
			t.Fatalf("the stream is not gzip: %v", err)
		}
		got := make([]byte, len(first))
		if _, err := io.ReadFull(zr, got); err != nil || string(got) != first {
			t.Fatalf("the first part: %q, %v", got, err)
		}
		close(firstRead)
		rest, err := io.ReadAll(zr)
		if err != nil || string(rest) != "<p>second part</p>" {
			t.Fatalf("the rest: %q, %v", rest, err)
		}
	})
	t.Run("a page flushed before its first byte arrives as its header says", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/flushes-first", nil)
		req.Header.Set("Accept-Encoding", "gzip")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		if res.Header.Get("Content-Encoding") == "gzip" {
			body = gunzip(t, body)
		}
		if string(body) != page {
			t.Fatalf("the page arrived as %d bytes (Content-Encoding %q) that are not the page", len(body), res.Header.Get("Content-Encoding"))
		}
	})
	for _, tc := range []struct {
		path   string
		status int
		text   string
	}{{"/fails", http.StatusTeapot, "no tea"}, {"/panics", http.StatusInternalServerError, "Internal Server Error"}} {
		t.Run(tc.path+" answers its error whole", func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+tc.path, nil)
			req.Header.Set("Accept-Encoding", "gzip")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			body, err := io.ReadAll(res.Body)
			if err != nil || res.StatusCode != tc.status || !strings.Contains(string(body), tc.text) {
				t.Fatalf("HTTP %d %.200q (%v), want %d with %q", res.StatusCode, body, err, tc.status, tc.text)
			}
		})
	}
}
