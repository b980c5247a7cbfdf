package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/countersign/countersign/app"
)

// serve runs the service until ctx ends (SIGTERM or Ctrl-C), then drains
// requests for up to 20 seconds. When screen is not nil (serve runs on a
// terminal), the owner setup link is shown there as a QR code as well.
func serve(ctx context.Context, cfg app.Config, log *slog.Logger, screen io.Writer) error {
	// Certificate files first: a missing or mismatched pair stops the start
	// before the database is touched. The ACME manager is built once the
	// store is open, since on PostgreSQL its cache is in the database.
	var secure *app.TLS
	if cfg.ACMEDomain == "" {
		var err error
		if secure, err = app.NewTLS(cfg, nil, log); err != nil {
			return fmt.Errorf("configuration:\n%w", err)
		}
	}
	// The listener comes before the app, whose links are made from the
	// base URL: one made from COUNTERSIGN_ADDR takes the port listened on.
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on COUNTERSIGN_ADDR %s: %w", cfg.Addr, err)
	}
	if cfg.BaseURLFromAddr {
		cfg.BaseURL = app.BaseURLFor(ln.Addr().String())
	}
	a, err := app.Open(ctx, cfg, log)
	if err != nil {
		ln.Close()
		return err
	}
	defer a.Close()
	if cfg.ACMEDomain != "" {
		if secure, err = app.NewTLS(cfg, a.Store, log); err != nil {
			ln.Close()
			return fmt.Errorf("configuration:\n%w", err)
		}
	}
	srv := &http.Server{
		Handler:           a.Handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		// No WriteTimeout: MCP responses may stream for as long as a call waits.
	}
	srv.RegisterOnShutdown(a.EndStreams)
	var wg sync.WaitGroup
	sweepCtx, stopSweep := context.WithCancel(context.Background())
	wg.Go(func() { a.Background(sweepCtx) })
	errc := make(chan error, 3)
	if secure != nil {
		srv.TLSConfig = secure.Config
		go func() { errc <- srv.ServeTLS(ln, "", "") }() // HTTP/2 as well
	} else {
		go func() { errc <- srv.Serve(ln) }()
	}
	var redirectSrv *http.Server
	if secure != nil && cfg.HTTPAddr != "" {
		rln, err := net.Listen("tcp", cfg.HTTPAddr)
		if err != nil {
			stopSweep()
			wg.Wait()
			_ = srv.Close()
			return fmt.Errorf("listen on COUNTERSIGN_HTTP_ADDR %s: %w", cfg.HTTPAddr, err)
		}
		redirectSrv = &http.Server{Handler: secure.Redirect, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}
		go func() { errc <- redirectSrv.Serve(rln) }()
		log.Info("redirecting http to https", "addr", rln.Addr().String(), "to", cfg.BaseURL)
	}
	var metricsSrv *http.Server
	if a.Metrics != nil {
		// A listener of its own, so /metrics never faces the public origin.
		mln, err := net.Listen("tcp", cfg.MetricsAddr)
		if err != nil {
			stopSweep()
			wg.Wait()
			_ = srv.Close()
			if redirectSrv != nil {
				_ = redirectSrv.Close()
			}
			return fmt.Errorf("listen on COUNTERSIGN_METRICS_ADDR %s: %w", cfg.MetricsAddr, err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", a.Metrics)
		metricsSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}
		go func() { errc <- metricsSrv.Serve(mln) }()
		log.Info("metrics listening", "addr", mln.Addr().String())
		if !loopback(mln.Addr()) {
			log.Warn("metrics are served to other machines: anyone who reaches this address reads them; "+
				"set COUNTERSIGN_METRICS_ADDR to a bare port (like :9090) for this machine only, or keep the address off the public network",
				"addr", mln.Addr().String())
		}
	}
	if cfg.BaseURLFromAddr {
		log.Info("countersign listening", "addr", ln.Addr().String(), "tls", tlsSource(cfg), "database", cfg.DatabaseName(),
			"base_url", cfg.BaseURL, "base_url_from", "COUNTERSIGN_ADDR, as COUNTERSIGN_BASE_URL is unset: set it to the origin people open")
	} else {
		log.Info("countersign listening", "addr", ln.Addr().String(), "tls", tlsSource(cfg), "database", cfg.DatabaseName(), "base_url", cfg.BaseURL)
	}
	if setup, err := a.SetupURL(ctx); err != nil {
		log.Error("make the owner setup invite", "err", err)
	} else if setup != "" {
		log.Info("nobody has registered yet: open this link to set up the owner's passkey (valid 24 h)", "setup_url", setup)
		if screen != nil {
			printQR(screen, "or scan it with the phone that will hold the owner's passkey:", setup)
		}
	}
	select {
	case err := <-errc:
		stopSweep()
		wg.Wait()
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if metricsSrv != nil {
		_ = metricsSrv.Close() // scrapes are short; nothing to drain
	}
	if redirectSrv != nil {
		_ = redirectSrv.Close() // redirects are short; nothing to drain
	}
	err = srv.Shutdown(shutdownCtx)
	stopSweep()
	wg.Wait()
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// loopback says whether a listener's address is reachable from this machine only.
func loopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// tlsSource says, for the start-up log, where serve's certificate comes from.
func tlsSource(cfg app.Config) string {
	switch {
	case cfg.TLSCert != "":
		return "files"
	case cfg.ACMEDomain != "":
		return "acme " + cfg.ACMEDomain
	}
	return "off"
}
