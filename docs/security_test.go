// Package docs holds the project's written contracts; its tests keep the
// threat model's pointers to tests true, every link of the README and the
// pages resolving, and the README short.
package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every test docs/security.md names as the evidence of a claim exists, in the
// package it names: a renamed or deleted test breaks this, not the claim's
// credibility.
func TestTheThreatModelNamesTestsThatExist(t *testing.T) {
	doc, err := os.ReadFile("security.md")
	if err != nil {
		t.Fatal(err)
	}
	refs := regexp.MustCompile("`([a-z/]+): ((?:Test|Fuzz)[A-Za-z0-9_]+)`").FindAllStringSubmatch(string(doc), -1)
	if len(refs) < 30 {
		t.Fatalf("security.md names %d tests; the table lost its pointers", len(refs))
	}
	for _, ref := range refs {
		pkg, name := ref[1], ref[2]
		files, err := filepath.Glob(filepath.Join("..", pkg, "*_test.go"))
		if err != nil || len(files) == 0 {
			t.Errorf("%s: no test files in package %s", name, pkg)
			continue
		}
		found := false
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			found = found || strings.Contains(string(src), "func "+name+"(")
		}
		if !found {
			t.Errorf("security.md cites %s: %s, which does not exist", pkg, name)
		}
	}
}
