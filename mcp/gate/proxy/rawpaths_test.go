package proxy_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/countersign/countersign/mcp/gate/proxy"
)

func TestParseRulesWarnsOfAPathComparedAsARawString(t *testing.T) {
	type found struct{ Argument, Function string }
	tests := []struct {
		name, expr string
		want       []found
	}{
		{"startsWith on args.path", "args.path.startsWith('/srv/fs/secret')", []found{{"path", "startsWith"}}},
		{"endsWith on args.destination", "args.destination.endsWith('.env')", []found{{"destination", "endsWith"}}},
		{"contains on args.source", "args.source.contains('secret')", []found{{"source", "contains"}}},
		{"matches on args.path", "args.path.matches('^/etc')", []found{{"path", "matches"}}},
		{"an index by name, camelCase", "args['filePath'].startsWith('/etc')", []found{{"filePath", "startsWith"}}},
		{"snake_case", "args.source_dir.startsWith('/etc')", []found{{"source_dir", "startsWith"}}},
		{"a plural, through exists", "args.paths.exists(p, p.startsWith('/etc'))", []found{{"paths", "startsWith"}}},
		{"a plural, through all", "args.directories.all(d, !d.endsWith('/.git'))", []found{{"directories", "endsWith"}}},
		{"an element of a plural by index", "args.files[0].startsWith('/etc')", []found{{"files", "startsWith"}}},
		{"a member of objects in args", "args.edits.exists(e, e.path.startsWith('/etc'))", []found{{"path", "startsWith"}}},
		{"through string()", "string(args.dir).startsWith('/etc')", []found{{"dir", "startsWith"}}},
		{"== on a path", "args.path == '/etc/passwd'", []found{{"path", "=="}}},
		{"!= on a path, on the right", "'/etc/passwd' != args.destinationFolder", []found{{"destinationFolder", "!="}}},
		{"two, in the order they are written", "args.target_path.startsWith('/x') || args.src.contains('y')", []found{{"target_path", "startsWith"}, {"src", "contains"}}},
		{"the same comparison twice warns once", "args.path.startsWith('/x') || args.path.startsWith('/y')", []found{{"path", "startsWith"}}},
		{"path.within is what to write", "path.within(args.path, '/srv/fs/secret')", nil},
		{"path.within over a plural", "args.paths.exists(p, path.within(p, '/srv/fs/secret'))", nil},
		{"path.clean before == is what to write", "path.clean(args.path) == '/etc/passwd'", nil},
		{"an argument that is not a path", "args.content.contains('password')", nil},
		{"a word that only contains a path word", "args.profile.startsWith('admin') || args.filesystem.startsWith('ext')", nil},
		{"has() of a path", "has(args.path)", nil},
		{"a number", "args.tail > 3", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expr, _ := json.Marshal(tc.expr)
			r, err := proxy.ParseRules([]byte(`{"tools": {"write_file": {"approval": true}, "move_file": {"approval": `+string(expr)+`}}}`), "")
			if err != nil {
				t.Fatal(err)
			}
			var got []found
			for _, w := range r.Warnings {
				if w.Tool != "move_file" || w.Expression != tc.expr {
					t.Errorf("warning %+v names another rule", w)
				}
				got = append(got, found{w.Argument, w.Function})
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("warnings = %+v, want %+v", got, tc.want)
			}
		})
	}
}
