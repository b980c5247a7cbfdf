package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models/core"
)

// maxWebBody bounds the body of every request but /mcp: forms and JSON of
// the pages (a passkey response is a few KiB). /mcp keeps its own limit
// (mcp.Options.MaxBodyBytes, 1 MiB), applied before the SDK reads a byte.
const maxWebBody = 64 << 10

// limitBody caps the body of every web request at maxWebBody before
// anything reads it: a larger declared length is refused at once, and a
// body that turns out larger stops being read at the limit.
func limitBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Path() == "/mcp" {
			return next(c)
		}
		r := c.Request()
		if r.ContentLength > maxWebBody {
			return tooLarge()
		}
		r.Body = http.MaxBytesReader(c.Response(), r.Body, maxWebBody)
		return next(c)
	}
}

func tooLarge() error {
	return echo.NewHTTPError(http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body is over %d bytes", maxWebBody))
}

// readJSON reads a JSON body of at most limit bytes into v.
func readJSON(c echo.Context, v any, limit int64) error {
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, limit+1))
	var over *http.MaxBytesError
	if errors.As(err, &over) || int64(len(body)) > limit {
		return core.Invalid("", "the request body is over %d bytes", limit)
	}
	if err != nil {
		return fmt.Errorf("read the request body: %w", err)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return core.Invalid("", "the request body is not the JSON this call takes: %v", err)
	}
	return nil
}
