package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/glebarez/sqlite"
	"github.com/labstack/echo/v4"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/countersign/countersign/models/core"
)

// bareItem is the one row the bare handler inserts per request.
type bareItem struct {
	ID        int64 `gorm:"primaryKey;autoIncrement"`
	Name      string
	Body      string
	CreatedAt time.Time
}

func (bareItem) TableName() string { return "load_bare_items" }

// bareServer is the yardstick: an Echo handler that binds a small JSON body
// and does one gorm insert, on the same kind of database as the service, and
// an MCP tool that does the same insert (bareTool).
type bareServer struct {
	url      string // POST /items
	mcp      string // the MCP endpoint of bareTool
	database string
	db       *gorm.DB // for the direct run
	close    func()
}

// startBare opens the yardstick's database (a fresh SQLite file with the
// service's DSN and pool settings, or a fresh PostgreSQL database next to
// databaseURL) and serves POST /items and the bare MCP tool on 127.0.0.1.
// The tool is served to the clients' revision as Countersign serves it: to
// 2025-11-25 by the SDK's session handler, to 2026-07-28 by its stateless
// handler (every request stands alone).
func startBare(ctx context.Context, databaseURL, revision string) (*bareServer, error) {
	var cleanups []func()
	cleanup := func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}
	cfg := &gorm.Config{
		Logger:                 logger.Discard,
		SkipDefaultTransaction: true,
		NowFunc:                func() time.Time { return time.Now().UTC() },
	}
	var (
		db       *gorm.DB
		database string
		dialect  core.Dialect
		err      error
	)
	if databaseURL == "" {
		dir, derr := os.MkdirTemp("", "countersign-load-bare-")
		if derr != nil {
			return nil, fmt.Errorf("bare data folder: %w", derr)
		}
		cleanups = append(cleanups, func() { os.RemoveAll(dir) })
		path := filepath.Join(dir, "bare.db")
		db, err = gorm.Open(sqlite.Open(core.SQLiteDSN(path)), cfg)
		database, dialect = "sqlite "+path, core.SQLite
	} else {
		fresh, drop, ferr := freshPostgres(ctx, databaseURL)
		if ferr != nil {
			cleanup()
			return nil, ferr
		}
		cleanups = append(cleanups, drop)
		db, err = gorm.Open(postgres.Open(fresh), cfg)
		database, dialect = "postgres "+redact(fresh), core.Postgres
	}
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("open bare database: %w", err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("open bare database: %w", err)
	}
	cleanups = append(cleanups, func() { sqlDB.Close() })
	// The pool of models.Open.
	sqlDB.SetMaxOpenConns(core.PoolSize(dialect))
	sqlDB.SetMaxIdleConns(core.PoolSize(dialect))
	sqlDB.SetConnMaxIdleTime(5 * time.Minute)
	if err := db.WithContext(ctx).AutoMigrate(&bareItem{}); err != nil {
		cleanup()
		return nil, fmt.Errorf("make bare table: %w", err)
	}

	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.POST("/items", func(c echo.Context) error {
		var in struct {
			Name string `json:"name"`
			Body string `json:"body"`
		}
		if err := c.Bind(&in); err != nil {
			return err
		}
		id, err := insertItem(c.Request().Context(), db, in.Name, in.Body)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusCreated, map[string]int64{"id": id})
	})
	mcpServer := sdk.NewServer(&sdk.Implementation{Name: "countersign-load-bare", Version: "1"}, nil)
	sdk.AddTool(mcpServer, &sdk.Tool{Name: bareTool, Description: "Insert one item."},
		func(ctx context.Context, _ *sdk.CallToolRequest, in bareInput) (*sdk.CallToolResult, bareOutput, error) {
			id, err := insertItem(ctx, db, in.Name, in.Body)
			return nil, bareOutput{ID: id}, err
		})
	var opts *sdk.StreamableHTTPOptions
	if revision >= revisionStateless {
		opts = &sdk.StreamableHTTPOptions{Stateless: true}
	}
	e.Any("/mcp", echo.WrapHandler(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return mcpServer }, opts)))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("listen: %w", err)
	}
	cleanups = append(cleanups, serveHTTP(ln, e))
	base := "http://" + ln.Addr().String()
	return &bareServer{url: base + "/items", mcp: base + "/mcp", database: database, db: db, close: cleanup}, nil
}

// insertItem is the yardstick's one row: the insert the bare handler, the
// bare MCP tool and the direct bare run each do.
func insertItem(ctx context.Context, db *gorm.DB, name, body string) (int64, error) {
	item := bareItem{Name: name, Body: body, CreatedAt: time.Now().UTC()}
	if err := db.WithContext(ctx).Create(&item).Error; err != nil {
		return 0, fmt.Errorf("insert: %w", err)
	}
	return item.ID, nil
}

// bareTool is the bare MCP tool: the same one insert as POST /items, behind
// the go-sdk's streamable HTTP handler, its schema check and its JSON-RPC.
const bareTool = "items_create"

type bareInput struct {
	Name string `json:"name"`
	Body string `json:"body"`
}

type bareOutput struct {
	ID int64 `json:"id"`
}

// createItem calls the bare MCP tool once over session s and checks its answer.
func createItem(ctx context.Context, s *sdk.ClientSession, c int, n int64) error {
	var out bareOutput
	err := callTool(ctx, s, bareTool, map[string]any{"name": fmt.Sprintf("item-%d-%d", c, n), "body": "Fixes the login redirect."}, &out)
	if err != nil {
		return err
	}
	if out.ID <= 0 {
		return fmt.Errorf("unexpected answer: id %d", out.ID)
	}
	return nil
}

// bareClient posts one small JSON body per request and checks the answer.
type bareClient struct {
	http *http.Client
	url  string
}

func (b bareClient) post(ctx context.Context, c int, n int64) error {
	body, _ := json.Marshal(map[string]string{"name": fmt.Sprintf("item-%d-%d", c, n), "body": "Fixes the login redirect."})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := b.http.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusCreated {
		return fmt.Errorf("HTTP %d: %.120s", res.StatusCode, data)
	}
	var out struct {
		ID int64 `json:"id"`
	}
	if err := json.Unmarshal(data, &out); err != nil || out.ID <= 0 {
		return fmt.Errorf("unexpected answer %.120s", data)
	}
	return nil
}
