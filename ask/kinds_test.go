package ask_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/countersign/countersign/ask"
)

// A kind is declared once, here: no package outside ask declares a constant
// or variable from one of its kinds or lists (an alias), and the storage tree
// never spells a kind out ("decision" aside, which is also a column and a
// field name). Adding a kind so touches ask, its words in views and its tests
// (docs/architecture.md walks through it).
func TestAKindIsDeclaredOnlyInPackageAsk(t *testing.T) {
	kinds := append(slices.Clone(ask.Kinds), ask.KindAutoApprove, ask.KindRuleChange, ask.KindMemberChange, ask.KindAuthorization)
	kinds = append(kinds, ask.RequestKinds...)
	lists := []string{"Kinds", "RequestKinds", "NeverAutoApproved"}
	root := ".."
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (name == "node_modules" || name == "ask" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.HasSuffix(path, "_templ.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		storage := strings.HasPrefix(filepath.ToSlash(path), "../models/")
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Field:
				return false // struct tags name payload members, not kinds
			case *ast.ValueSpec:
				for _, v := range n.Values {
					if sel, ok := v.(*ast.SelectorExpr); ok {
						if x, ok := sel.X.(*ast.Ident); ok && x.Name == "ask" && (strings.HasPrefix(sel.Sel.Name, "Kind") || slices.Contains(lists, sel.Sel.Name)) {
							t.Errorf("%s declares ask.%s again", fset.Position(v.Pos()), sel.Sel.Name)
						}
					}
				}
			case *ast.BasicLit:
				if !storage || n.Kind != token.STRING {
					return true
				}
				if s, err := strconv.Unquote(n.Value); err == nil && s != ask.KindDecision && slices.Contains(kinds, s) {
					t.Errorf("%s spells the kind %q: use ask's constant", fset.Position(n.Pos()), s)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Every kind approvals_create files says how its payload is written, and
// nothing else does.
func TestEveryKindSaysHowItsPayloadIsWritten(t *testing.T) {
	for _, k := range ask.Kinds {
		if !strings.HasPrefix(ask.PayloadHelp[k], "payload."+k+":") {
			t.Errorf("PayloadHelp[%q] = %q, want it to start payload.%s:", k, ask.PayloadHelp[k], k)
		}
	}
	for k := range ask.PayloadHelp {
		if !slices.Contains(ask.Kinds, k) {
			t.Errorf("PayloadHelp holds %q, which approvals_create does not file", k)
		}
	}
}
