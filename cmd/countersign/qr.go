package main

import (
	"fmt"
	"io"
	"os"

	"github.com/mdp/qrterminal/v3"
	"golang.org/x/term"
)

// terminalOf is w when w is a terminal a person is reading, else nil: a QR
// code is for a phone's camera held up to a screen, never for a log file or
// a pipe, where it would be noise.
func terminalOf(w io.Writer) io.Writer {
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return f
	}
	return nil
}

// printQR writes link to w as a QR code of half blocks (two modules a
// character, so it fits a terminal), with a light quiet zone that stays
// light on a dark terminal, for a phone's camera to open.
func printQR(w io.Writer, caption, link string) {
	fmt.Fprintln(w, caption)
	qrterminal.GenerateWithConfig(link, qrterminal.Config{
		Level:          qrterminal.M,
		Writer:         w,
		HalfBlocks:     true,
		BlackChar:      qrterminal.BLACK_BLACK,
		WhiteBlackChar: qrterminal.WHITE_BLACK,
		WhiteChar:      qrterminal.WHITE_WHITE,
		BlackWhiteChar: qrterminal.BLACK_WHITE,
		QuietZone:      2,
	})
}
