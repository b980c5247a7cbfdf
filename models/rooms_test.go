package models_test

import (
	"bufio"
	"encoding/json"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/countersign/countersign/"

// room is a package of the storage tree as docs/architecture.md lists it.
type room struct {
	name  string // models, or models/<room>
	rank  int    // its row in the table, from the top
	may   []string
	found bool
}

// rooms reads the storage table of docs/architecture.md: a row per room,
// from the top down, with what it may import.
func rooms(t *testing.T) map[string]*room {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	row := regexp.MustCompile("^\\| `(models(?:/[a-z]+)?)` \\|.*\\| ((?:`[a-z]+`(?:, )?)*) \\|$")
	name := regexp.MustCompile("`([a-z]+)`")
	out := map[string]*room{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		m := row.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		r := &room{name: m[1], rank: len(out)}
		for _, n := range name.FindAllStringSubmatch(m[2], -1) {
			r.may = append(r.may, n[1])
		}
		out[r.name] = r
	}
	if len(out) < 2 {
		t.Fatalf("docs/architecture.md lists %d rooms of the storage tree", len(out))
	}
	return out
}

type listed struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Imports    []string
	Deps       []string
}

func storagePackages(t *testing.T) []listed {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", "-deps=false", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []listed
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p listed
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		deps, err := exec.Command("go", "list", "-deps", p.ImportPath).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", p.ImportPath, err)
		}
		p.Deps = strings.Fields(string(deps))
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// short names a package of this module as the table does: a room by its last
// element (models itself as models), ask and proof by their names.
func short(path string) string {
	p := strings.TrimPrefix(path, module)
	if p == "models" {
		return p
	}
	return strings.TrimPrefix(p, "models/")
}

// The storage tree's rooms import one way, as docs/architecture.md says:
// each imports exactly what its row lists, only rooms below it, and from the
// rest of the module only the pure packages ask and proof; none reaches HTTP,
// Echo, MCP or templ. No room holds more than 3,000 lines of non-test Go, and
// no file more than 600.
func TestTheRoomsImportAsArchitectureSays(t *testing.T) {
	table := rooms(t)
	for _, p := range storagePackages(t) {
		name := strings.TrimPrefix(p.ImportPath, module)
		r, ok := table[name]
		if !ok {
			t.Errorf("%s is not in docs/architecture.md's table of rooms", name)
			continue
		}
		r.found = true
		var imports []string
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			s := short(imp)
			imports = append(imports, s)
			if dep, ok := table["models/"+s]; ok && dep.rank <= r.rank {
				t.Errorf("%s imports %s, a room at or above it", name, s)
			} else if !ok && s != "ask" && s != "proof" {
				t.Errorf("%s imports %s: the storage tree imports no package of the module but ask and proof", name, imp)
			}
		}
		sort.Strings(imports)
		want := slices.Clone(r.may)
		sort.Strings(want)
		if !slices.Equal(imports, want) {
			t.Errorf("%s imports %v; docs/architecture.md says it may import %v", name, imports, want)
		}
		for _, dep := range p.Deps {
			for _, banned := range []string{"github.com/labstack/echo", "github.com/modelcontextprotocol/", "github.com/a-h/templ",
				module + "handlers", module + "mcp", module + "views", module + "app"} {
				if strings.HasPrefix(dep, banned) {
					t.Errorf("%s depends on %s", name, dep)
				}
			}
		}
		total := 0
		for _, f := range p.GoFiles {
			b, err := os.ReadFile(filepath.Join(p.Dir, f))
			if err != nil {
				t.Fatal(err)
			}
			n := strings.Count(string(b), "\n")
			total += n
			if n > 600 {
				t.Errorf("%s/%s holds %d lines, more than 600", name, f, n)
			}
		}
		if total > 3000 {
			t.Errorf("%s holds %d lines of non-test Go, more than 3,000", name, total)
		}
		for _, f := range p.GoFiles {
			b, _ := os.ReadFile(filepath.Join(p.Dir, f))
			if strings.Contains(string(b), `"net/http"`) {
				t.Errorf("%s/%s imports net/http", name, f)
			}
		}
		if says, want := standsOn(t, p), roomsIn(r.may, name); says != want {
			t.Errorf("%s's doc comment says it stands on %q; docs/architecture.md says %q", name, says, want)
		}
	}
	for name, r := range table {
		if !r.found {
			t.Errorf("docs/architecture.md lists %s, which is no package", name)
		}
	}
}

// standsOn is what the package's doc comment says it stands on: "It stands
// on the rooms a, b and c;".
func standsOn(t *testing.T, p listed) string {
	t.Helper()
	fset := token.NewFileSet()
	for _, f := range p.GoFiles {
		file, err := parser.ParseFile(fset, filepath.Join(p.Dir, f), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if file.Doc == nil {
			continue
		}
		doc := strings.Join(strings.Fields(file.Doc.Text()), " ")
		if m := regexp.MustCompile(`It stands on ([^;]*);`).FindStringSubmatch(doc); m != nil {
			return m[1]
		}
		t.Errorf("%s's doc comment does not say what it stands on", p.ImportPath)
		return ""
	}
	t.Errorf("%s has no doc comment", p.ImportPath)
	return ""
}

// roomsIn says which rooms of may a room stands on, as the doc comments do.
func roomsIn(may []string, name string) string {
	var rooms []string
	for _, m := range may {
		if m != "ask" && m != "proof" {
			rooms = append(rooms, m)
		}
	}
	sort.Strings(rooms)
	switch {
	case name == "models":
		return "every room"
	case len(rooms) == 0:
		return "no room"
	case len(rooms) == 1:
		return "the room " + rooms[0]
	}
	return "the rooms " + strings.Join(rooms[:len(rooms)-1], ", ") + " and " + rooms[len(rooms)-1]
}
