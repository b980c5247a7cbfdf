package ask_test

import (
	"os/exec"
	"strings"
	"testing"
)

// Package ask is pure: it knows no database, no HTTP, no MCP and no
// templates, so that models, mcp and views can all import it.
func TestAskImportsNoStorageHTTPOrMCP(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	forbidden := []string{"github.com/countersign/countersign/", "net/http", "gorm.io/", "github.com/labstack/echo",
		"github.com/modelcontextprotocol/", "github.com/a-h/templ", "database/sql"}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "github.com/countersign/countersign/ask" {
			continue
		}
		for _, f := range forbidden {
			if strings.HasPrefix(dep, f) {
				t.Errorf("package ask depends on %s", dep)
			}
		}
	}
}
