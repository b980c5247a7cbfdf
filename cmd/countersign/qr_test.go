package main

import (
	"errors"
	"image"
	"image/color"
	"io"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/makiuchi-d/gozxing"
	"github.com/makiuchi-d/gozxing/qrcode"
)

// onTerminal starts the binary with a pseudo-terminal as its stdin, stdout
// and stderr, and returns what it prints there as it comes.
func onTerminal(t *testing.T, env map[string]string, args ...string) (screen *lockedBuffer, done <-chan struct{}) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = environ(env)
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 60, Cols: 200})
	if err != nil {
		t.Fatalf("start countersign %s on a pseudo-terminal: %v", strings.Join(args, " "), err)
	}
	screen = &lockedBuffer{}
	ended := make(chan struct{})
	go func() {
		_, _ = io.Copy(screen, tty) // ends with EIO once the process has gone
		close(ended)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		tty.Close()
		<-ended
		if t.Failed() {
			t.Logf("the terminal showed:\n%s", screen)
		}
	})
	return screen, ended
}

// halfBlock is the two modules, top and bottom, that each character of a
// half-block QR code shows: the character's ink is light (a terminal's
// foreground on its dark background), a blank is dark.
var halfBlock = map[rune][2]bool{ // light top, light bottom
	'█': {true, true},
	'▀': {true, false},
	'▄': {false, true},
	' ': {false, false},
}

// decodeQR finds the first QR code of half blocks on screen, rebuilds its
// modules as an image and decodes it with ZXing. It returns an error when
// there is none or it does not decode.
func decodeQR(screen string) (string, error) {
	var rows []string
	for _, line := range strings.Split(strings.ReplaceAll(screen, "\r", ""), "\n") {
		isCode := strings.ContainsAny(line, "█▀▄") && strings.Trim(line, "█▀▄ ") == ""
		if isCode {
			rows = append(rows, line)
		} else if len(rows) > 0 {
			break
		}
	}
	if len(rows) == 0 {
		return "", errors.New("no QR code of half blocks on the screen")
	}
	const scale, margin = 4, 4 // pixels a module; light modules around it
	width := 0
	for _, r := range rows {
		width = max(width, len([]rune(r)))
	}
	img := image.NewGray(image.Rect(0, 0, (width+2*margin)*scale, (2*len(rows)+2*margin)*scale))
	for i := range img.Pix {
		img.Pix[i] = 0xff
	}
	for y, r := range rows {
		for x, c := range []rune(r) {
			for half, light := range halfBlock[c] {
				if light {
					continue
				}
				for dy := range scale {
					for dx := range scale {
						img.SetGray((x+margin)*scale+dx, (2*y+half+margin)*scale+dy, color.Gray{})
					}
				}
			}
		}
	}
	bmp, err := gozxing.NewBinaryBitmapFromImage(img)
	if err != nil {
		return "", err
	}
	res, err := qrcode.NewQRCodeReader().Decode(bmp, nil)
	if err != nil {
		return "", err
	}
	return res.GetText(), nil
}

// On a terminal, serve shows the owner setup link as a QR code under the
// link itself, and the code decodes to exactly that link; so does invite,
// whose link stays alone on its last line. Through a pipe, neither prints one.
func TestServeAndInviteShowTheLinkAsAQRCodeOnATerminal(t *testing.T) {
	data := t.TempDir()
	env := map[string]string{"COUNTERSIGN_DATA": data, "COUNTERSIGN_ADDR": "127.0.0.1:0"}
	screen, _ := onTerminal(t, env, "serve")
	var link, decoded string
	var lastErr error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		s := screen.String()
		m := setupLink.FindStringSubmatch(s)
		if m == nil {
			continue
		}
		link = m[1]
		if decoded, lastErr = decodeQR(s[strings.Index(s, link):]); lastErr == nil {
			break
		}
	}
	if link == "" {
		t.Fatal("serve printed no setup link on the terminal")
	}
	if decoded != link {
		t.Fatalf("the QR code under the setup link decodes to %q (%v), want %q", decoded, lastErr, link)
	}

	screen, ended := onTerminal(t, env, "invite", "--role", "member")
	select {
	case <-ended:
	case <-time.After(time.Minute):
		t.Fatal("invite did not end within a minute")
	}
	out := strings.ReplaceAll(screen.String(), "\r", "")
	inviteLink := regexp.MustCompile(`http://\S+/invite/inv_\S+`).FindString(lastLine(out))
	if inviteLink == "" || lastLine(out) != inviteLink {
		t.Fatalf("the last line of invite is %q, want the invite link alone", lastLine(out))
	}
	if got, err := decodeQR(out); err != nil || got != inviteLink {
		t.Fatalf("invite's QR code decodes to %q (%v), want %q", got, err, inviteLink)
	}

	piped := mustCLI(t, env, "invite", "--role", "member")
	if strings.ContainsAny(piped.stdout, "█▀▄") {
		t.Errorf("invite printed a QR code into a pipe:\n%s", piped)
	}
}
