package views

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/a-h/templ"
	"rsc.io/qr"
)

// qrQuietZone is the white border a reader needs around a QR code, in modules.
const qrQuietZone = 4

// QRSVG is text as a QR code in an inline SVG, black squares on white with
// the quiet zone, labelled for screen readers: a phone's camera opens an
// invite link from the admin's screen. The SVG holds only numbers we make,
// never the text itself, and no style (the CSP forbids inline styles).
func QRSVG(text, label string) (templ.Component, error) {
	code, err := qr.Encode(text, qr.M)
	if err != nil {
		return nil, fmt.Errorf("qr code: %w", err)
	}
	size := code.Size + 2*qrQuietZone
	var path strings.Builder
	for y := 0; y < code.Size; y++ {
		for x := 0; x < code.Size; x++ {
			if code.Black(x, y) {
				fmt.Fprintf(&path, "M%d %dh1v1h-1z", x+qrQuietZone, y+qrQuietZone)
			}
		}
	}
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		_, err := fmt.Fprintf(w, `<svg class="qr" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" role="img" aria-label="%s" data-testid="qr" shape-rendering="crispEdges">`+
			`<rect width="%d" height="%d" fill="#fff"/><path fill="#000" d="%s"/></svg>`, size, size, templ.EscapeString(label), size, size, path.String())
		return err
	}), nil
}
