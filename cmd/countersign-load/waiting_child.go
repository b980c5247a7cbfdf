package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/mcp/bearer"
)

// setupWorkers is how many agents the child sets up at once.
const setupWorkers = 16

// waitingChild is the agents' side of the waiting run, in a process of its
// own: it files max(agents, timelines) asks; agent i files ask i on its own
// MCP session and subscribes to it, and keeps only its GET stream open (its
// idle POST connection is closed, as the server's idle timeout would close
// it); the asks beyond the agents' are filed over one more session. When the
// parent writes "timelines", it opens a live timeline on each of the first
// `timelines` asks, spread over the web sessions it was given. It reports on
// its standard output (the line* constants) and ends when its standard input
// closes.
func waitingChild(ctx context.Context, agents, timelines int, in io.Reader, out io.Writer) error {
	endpoint, token, revision := os.Getenv(childEndpointEnv), os.Getenv(childTokenEnv), os.Getenv(childRevisionEnv)
	var cookies []string
	if c := os.Getenv(childCookiesEnv); c != "" {
		cookies = strings.Split(c, ",")
	}
	var outMu sync.Mutex
	say := func(format string, args ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Fprintf(out, format+"\n", args...)
	}
	fail := func(err error) error {
		say("%s %s", lineFailed, strings.ReplaceAll(err.Error(), "\n", " "))
		return err
	}
	asks := make([]string, max(agents, timelines))
	// The sessions are not closed one by one at the end (thousands of
	// DELETEs): the process ends, and with it their connections.
	var sessions []*sdk.ClientSession
	var sessionsMu sync.Mutex
	// connect opens an agent's client; on 2026-07-28, whose Subscribe returns
	// before the service holds the subscription, acked hears each
	// notifications/subscriptions/acknowledged.
	connect := func(heard func(uri string), acked chan<- struct{}) (*sdk.ClientSession, *http.Transport, error) {
		tr := &http.Transport{Proxy: nil, DialContext: (&net.Dialer{Timeout: 10 * time.Second}).DialContext, MaxIdleConnsPerHost: 1}
		opts := &sdk.ClientOptions{}
		if heard != nil {
			opts.ResourceUpdatedHandler = func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) { heard(r.Params.URI) }
		}
		client := sdk.NewClient(&sdk.Implementation{Name: "countersign-load-waiting", Version: "1"}, opts)
		if acked != nil {
			client.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
				return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
					if method == "notifications/subscriptions/acknowledged" {
						select {
						case acked <- struct{}{}:
						default:
						}
					}
					return next(ctx, method, req)
				}
			})
		}
		s, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: endpoint,
			HTTPClient: &http.Client{Transport: bearer.Transport{Token: token, Base: tr}}, MaxRetries: -1}, &sdk.ClientSessionOptions{ProtocolVersion: revision})
		if err != nil {
			return nil, nil, err
		}
		sessionsMu.Lock()
		sessions = append(sessions, s)
		sessionsMu.Unlock()
		return s, tr, nil
	}
	file := func(s *sdk.ClientSession, i int) (string, error) {
		var filed struct {
			ApprovalID string `json:"approval_id"`
		}
		if err := callTool(ctx, s, "approvals_create", prAsk(i, int64(i+1)), &filed); err != nil {
			return "", fmt.Errorf("file ask %d: %w", i, err)
		}
		return filed.ApprovalID, nil
	}

	work := make(chan int)
	var (
		wg     sync.WaitGroup
		failed atomic.Pointer[error]
		filer  *sdk.ClientSession
	)
	if len(asks) > agents {
		var err error
		if filer, _, err = connect(nil, nil); err != nil {
			return fail(fmt.Errorf("connect the filer: %w", err))
		}
	}
	for range setupWorkers {
		wg.Go(func() {
			for i := range work {
				if failed.Load() != nil {
					continue
				}
				var id string
				err := func() error {
					if i >= agents {
						var err error
						id, err = file(filer, i)
						return err
					}
					var acked chan struct{}
					if revision >= revisionStateless {
						acked = make(chan struct{}, 1)
					}
					s, tr, err := connect(func(uri string) {
						say("%s %s %d", lineHeard, strings.TrimPrefix(uri, "countersign://approvals/"), time.Now().UnixNano())
					}, acked)
					if err != nil {
						return fmt.Errorf("connect agent %d: %w", i, err)
					}
					if id, err = file(s, i); err != nil {
						return err
					}
					if err := s.Subscribe(ctx, &sdk.SubscribeParams{URI: "countersign://approvals/" + id}); err != nil {
						return fmt.Errorf("agent %d subscribes: %w", i, err)
					}
					if acked != nil {
						select {
						case <-acked:
						case <-time.After(30 * time.Second):
							return fmt.Errorf("agent %d: subscriptions/listen not acknowledged within 30 s", i)
						}
					}
					tr.CloseIdleConnections()
					return nil
				}()
				if err != nil {
					failed.CompareAndSwap(nil, &err)
					continue
				}
				asks[i] = id
				say("%s %d %s", lineAsk, i, id)
			}
		})
	}
	for i := range asks {
		work <- i
	}
	close(work)
	wg.Wait()
	if err := failed.Load(); err != nil {
		return fail(*err)
	}
	say(lineAgentsReady)

	lines := bufio.NewScanner(in)
	if !lines.Scan() || lines.Text() != "timelines" {
		return nil
	}
	base := strings.TrimSuffix(endpoint, "/mcp")
	var streams []io.Closer
	defer func() {
		for _, s := range streams {
			s.Close()
		}
	}()
	for i := range timelines {
		tr := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/approvals/"+asks[i]+"/events", nil)
		if err != nil {
			return fail(err)
		}
		req.Header.Set("Cookie", "cs_session="+cookies[i/10])
		req.Header.Set("Accept", "text/event-stream")
		res, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			return fail(fmt.Errorf("open timeline %d: %w", i, err))
		}
		if res.StatusCode != http.StatusOK {
			res.Body.Close()
			return fail(fmt.Errorf("open timeline %d: %s", i, res.Status))
		}
		streams = append(streams, res.Body)
		id := asks[i]
		go func() {
			sc := bufio.NewScanner(res.Body)
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "data: ") && strings.Contains(sc.Text(), `"step":"denied"`) {
					say("%s %s %d", lineTimeline, id, time.Now().UnixNano())
				}
			}
		}()
	}
	say(lineTimelinesReady)
	for lines.Scan() {
	}
	return nil
}
