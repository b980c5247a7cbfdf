package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/countersign/countersign/apptest"
)

// zeros is an endless body of one repeated byte.
type zeros byte

func (z zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(z)
	}
	return len(p), nil
}

// memoryKB reads a field (VmRSS, VmHWM) of /proc/PID/status, in KiB.
func memoryKB(t *testing.T, pid int, field string) int {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("read the server's memory: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatalf("%s: %q", field, v)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// Unauthenticated 30 MB posts, 16 at a time, as multipart (the finding: it
// was parsed up to 32 MB each in memory before any check), as a urlencoded
// form, declared or streamed, keep the server process under 100 MB: every
// web body stops at 64 KiB and multipart is refused unread.
func TestAFloodOfLargePostsKeepsTheServerSmall(t *testing.T) {
	s := startServer(t, apptest.SQLite)
	pid := s.cmd.Process.Pid
	before := memoryKB(t, pid, "VmRSS")
	const size, parallel = 30 << 20, 16
	kinds := []struct {
		name, contentType string
		declared          bool
		want              int
	}{
		{"multipart, streamed", "multipart/form-data; boundary=x", false, http.StatusUnsupportedMediaType},
		{"multipart, length declared", "multipart/form-data; boundary=x", true, http.StatusRequestEntityTooLarge},
		{"urlencoded, streamed", "application/x-www-form-urlencoded", false, http.StatusForbidden},
		{"urlencoded, length declared", "application/x-www-form-urlencoded", true, http.StatusRequestEntityTooLarge},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			var (
				wg      sync.WaitGroup
				mu      sync.Mutex
				answers = map[string]int{}
			)
			for i := range parallel {
				path := []string{"/signin/finish", "/signin/begin", "/admin/invites", "/policies/revoke"}[i%4]
				wg.Go(func() {
					prefix := "--x\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\n"
					if !strings.HasPrefix(k.contentType, "multipart/") {
						prefix = "_csrf=" + strings.Repeat("a", 43) + "&pad="
					}
					var body io.Reader = io.MultiReader(strings.NewReader(prefix), io.LimitReader(zeros('a'), size))
					if !k.declared {
						body = struct{ io.Reader }{body} // no length: sent chunked
					}
					req, _ := http.NewRequest(http.MethodPost, s.URL+path, body)
					if k.declared {
						req.ContentLength = int64(len(prefix) + size)
					}
					req.Header.Set("Content-Type", k.contentType)
					res, err := http.DefaultClient.Do(req)
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						answers["connection closed before an answer"]++ // the server stopped reading: also fine
						return
					}
					res.Body.Close()
					answers[strconv.Itoa(res.StatusCode)]++
				})
			}
			wg.Wait()
			if answers[strconv.Itoa(k.want)] == 0 || answers[strconv.Itoa(k.want)]+answers["connection closed before an answer"] != parallel {
				t.Errorf("16 posts answered %v, want HTTP %d", answers, k.want)
			}
		})
	}
	peak := memoryKB(t, pid, "VmHWM")
	t.Logf("server RSS %d KiB before, peak %d KiB", before, peak)
	if peak > 100<<10 {
		t.Fatalf("the server's peak RSS was %d KiB (%d KiB before the flood), want under 100 MB", peak, before)
	}
}
