package proxy_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"cel.dev/cel-go/cel"

	"github.com/countersign/countersign/apptest/gatetest"
	"github.com/countersign/countersign/mcp/gate/proxy"
)

// pathOptions are an upstream serving /srv/fs, then /srv/other, run by a
// user whose home is /home/ada.
var pathOptions = proxy.PathOptions{Roots: []string{"/srv/fs", "/srv/other"}, Home: "/home/ada"}

// evalPath evaluates expr, over the string variables p and dir, with the
// path library of o: the functions exactly as a rule calls them.
func evalPath(t *testing.T, o proxy.PathOptions, expr, p, dir string) (any, error) {
	t.Helper()
	env, err := cel.NewEnv(proxy.PathLibrary(o), cel.Variable("p", cel.StringType), cel.Variable("dir", cel.StringType))
	if err != nil {
		t.Fatal(err)
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		t.Fatalf("compile %s: %v", expr, iss.Err())
	}
	prg, err := env.Program(ast)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := prg.Eval(map[string]any{"p": p, "dir": dir})
	if err != nil {
		return nil, err
	}
	return out.Value(), nil
}

func TestPathCleanReadsAPathAsServerFilesystemDoes(t *testing.T) {
	tests := []struct {
		name, p string
		opts    *proxy.PathOptions // nil: pathOptions
		want    string
		wantErr string
	}{
		{name: "a clean absolute path is itself", p: "/srv/fs/secret/b.txt", want: "/srv/fs/secret/b.txt"},
		{name: "a .. that climbs out of one folder into another is resolved", p: "/srv/fs/public/../secret/b.txt", want: "/srv/fs/secret/b.txt"},
		{name: ".. past the root stops at /", p: "/../../etc/passwd", want: "/etc/passwd"},
		{name: "repeated slashes are one", p: "/srv/fs//secret///b.txt", want: "/srv/fs/secret/b.txt"},
		{name: "a leading // is one slash", p: "//srv/fs/secret", want: "/srv/fs/secret"},
		{name: "/./ is nothing", p: "/srv/fs/./secret/./b.txt", want: "/srv/fs/secret/b.txt"},
		{name: "a trailing slash goes", p: "/srv/fs/secret/", want: "/srv/fs/secret"},
		{name: "a trailing /. goes", p: "/srv/fs/secret/.", want: "/srv/fs/secret"},
		{name: "the root is /", p: "//", want: "/"},
		{name: "case is kept: a different name on a case-sensitive file system", p: "/srv/fs/SECRET/b.txt", want: "/srv/fs/SECRET/b.txt"},
		{name: "a folder spelled in capitals, then left with .., is gone", p: "/srv/fs/SECRET/../secret/b.txt", want: "/srv/fs/secret/b.txt"},
		{name: "~ is the home directory", p: "~", want: "/home/ada"},
		{name: "~/ is the home directory", p: "~/", want: "/home/ada"},
		{name: "~/… is below the home directory", p: "~/notes/a.txt", want: "/home/ada/notes/a.txt"},
		{name: "~/../../ climbs out of the home directory", p: "~/../../srv/fs/secret/b.txt", want: "/srv/fs/secret/b.txt"},
		{name: "~user is not expanded: it is a relative name under the first root", p: "~bob/a.txt", want: "/srv/fs/~bob/a.txt"},
		{name: "a ~ inside a path is a name", p: "/srv/fs/~/a.txt", want: "/srv/fs/~/a.txt"},
		{name: "a relative path is under the first root", p: "secret/b.txt", want: "/srv/fs/secret/b.txt"},
		{name: "a relative ./ path is under the first root", p: "./secret/../public/a.txt", want: "/srv/fs/public/a.txt"},
		{name: "a relative path that leaves the first root for the second is in the second", p: "../other/a.txt", want: "/srv/other/a.txt"},
		{name: "a relative path that escapes every root is read against the first", p: "../../etc/passwd", want: "/etc/passwd"},
		{name: "the empty path is the first root", p: "", want: "/srv/fs"},
		{name: "a dot is the first root", p: ".", want: "/srv/fs"},
		{name: "a trailing quote is part of the name", p: `/srv/fs"`, want: `/srv/fs"`},
		{name: "a backslash is part of a name on POSIX", p: `/srv/fs/public\..\secret`, want: `/srv/fs/public\..\secret`},
		{name: "a NUL byte fails", p: "/srv/fs/a\x00b", wantErr: "NUL byte"},
		{name: "a Windows drive path fails, as the server refuses it", p: `C:\Users\ada`, wantErr: "Windows drive path"},
		{name: "a bare drive fails", p: "c:", wantErr: "Windows drive path"},
		{name: "a relative path with no roots fails", p: "secret/b.txt", opts: &proxy.PathOptions{Home: "/home/ada"}, wantErr: "no roots (paths.roots)"},
		{name: "the empty path with no roots fails", p: "", opts: &proxy.PathOptions{}, wantErr: "no roots"},
		{name: "~ with no home fails", p: "~/a.txt", opts: &proxy.PathOptions{Roots: []string{"/srv/fs"}}, wantErr: "no home directory (paths.home)"},
		{name: "an absolute path needs neither roots nor home", p: "/srv/fs/../fs/a", opts: &proxy.PathOptions{}, want: "/srv/fs/a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := pathOptions
			if tc.opts != nil {
				o = *tc.opts
			}
			got, err := evalPath(t, o, "path.clean(p)", tc.p, "")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "path.clean: ") {
					t.Fatalf("path.clean(%q) = %v, %v; want an error saying %q", tc.p, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("path.clean(%q) = %v, %v; want %q", tc.p, got, err, tc.want)
			}
		})
	}
}

func TestPathWithinNeverMatchesAPathThatEscapes(t *testing.T) {
	tests := []struct {
		name, p, dir string
		want         bool
		wantErr      string
	}{
		{name: "the folder itself is within it", p: "/srv/fs/secret", dir: "/srv/fs/secret", want: true},
		{name: "a file below it is within it", p: "/srv/fs/secret/b.txt", dir: "/srv/fs/secret", want: true},
		{name: "a file deep below it is within it", p: "/srv/fs/secret/x/y/z", dir: "/srv/fs/secret", want: true},
		{name: "a sibling with the same prefix is not within it", p: "/srv/fs/secretive/b.txt", dir: "/srv/fs/secret", want: false},
		{name: "a sibling that is a prefix of it is not within it", p: "/srv/fs/secre", dir: "/srv/fs/secret", want: false},
		{name: "its name and a quote is beside it, where the server writes it", p: `/srv/fs/secret"`, dir: "/srv/fs/secret", want: false},
		{name: "its parent is not within it", p: "/srv/fs", dir: "/srv/fs/secret", want: false},
		{name: "a path that enters then leaves it is not within it", p: "/srv/fs/secret/../public/a.txt", dir: "/srv/fs/secret", want: false},
		{name: "a path that climbs into it from a sibling is within it", p: "/srv/fs/public/../secret/b.txt", dir: "/srv/fs/secret", want: true},
		{name: "// in the path", p: "/srv/fs//secret/b.txt", dir: "/srv/fs/secret", want: true},
		{name: "/./ in the path", p: "/srv/fs/./secret/b.txt", dir: "/srv/fs/secret", want: true},
		{name: "a capitalised folder left with ..", p: "/srv/fs/SECRET/../secret/b.txt", dir: "/srv/fs/secret", want: true},
		{name: "~/../../ from the home directory", p: "~/../../srv/fs/secret/b.txt", dir: "/srv/fs/secret", want: true},
		{name: "a relative path under the first root", p: "secret/b.txt", dir: "/srv/fs/secret", want: true},
		{name: "a relative path that climbs out of its folder", p: "secret/../public/b.txt", dir: "/srv/fs/secret", want: false},
		{name: "the empty path is the first root, not a folder below it", p: "", dir: "/srv/fs/secret", want: false},
		{name: "the empty path is within the first root", p: "", dir: "/srv/fs", want: true},
		{name: "a trailing slash on the folder changes nothing", p: "/srv/fs/secret/b.txt", dir: "/srv/fs/secret/", want: true},
		{name: "a trailing slash on the path changes nothing", p: "/srv/fs/secret/", dir: "/srv/fs/secret", want: true},
		{name: "a folder spelled with // and /./", p: "/srv/fs/secret/b.txt", dir: "//srv/./fs//secret", want: true},
		{name: "a folder spelled with ~", p: "/home/ada/.ssh/id_ed25519", dir: "~/.ssh", want: true},
		{name: "a relative folder is under the first root", p: "/srv/fs/secret/b.txt", dir: "secret", want: true},
		{name: "everything absolute is within /", p: "/etc/passwd", dir: "/", want: true},
		{name: "a folder written as .. of another is that parent", p: "/srv/fs/secret/b.txt", dir: "/srv/fs/public/..", want: true},
		{name: "another case is within it only on a file system that folds case: fails, so a person decides", p: "/srv/fs/SECRET/b.txt", dir: "/srv/fs/secret", wantErr: "only when case and Unicode spelling are ignored"},
		{name: "another Unicode spelling (NFD) is within it only under NFC: fails", p: "/srv/fs/cafe\u0301/b.txt", dir: "/srv/fs/caf\u00e9", wantErr: "only when case and Unicode spelling are ignored"},
		{name: "a sibling with the same prefix in another case is still not within it", p: "/srv/fs/SECRETIVE/b.txt", dir: "/srv/fs/secret", want: false},
		{name: "an empty folder names nothing: fails", p: "/srv/fs/secret/b.txt", dir: "", wantErr: "the directory is empty"},
		{name: "a path that cannot be read fails", p: "/srv/fs/secret/\x00", dir: "/srv/fs/secret", wantErr: "NUL byte"},
		{name: "a folder that cannot be read fails", p: "/srv/fs/secret/b.txt", dir: "D:/secret", wantErr: "Windows drive path"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := evalPath(t, pathOptions, "path.within(p, dir)", tc.p, tc.dir)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "path.within: ") {
					t.Fatalf("path.within(%q, %q) = %v, %v; want an error saying %q", tc.p, tc.dir, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("path.within(%q, %q) = %v, %v; want %t", tc.p, tc.dir, got, err, tc.want)
			}
		})
	}
}

// The pinned server-filesystem's own validatePath, run by Node on every
// spelling above it accepts, opens the path path.clean says: the table is
// checked against the upstream, not against our reading of its source.
func TestPathCleanAgreesWithServerFilesystemsValidatePath(t *testing.T) {
	bin := gatetest.FilesystemServer(t)
	lib, err := filepath.EvalSymlinks(bin)
	if err != nil {
		t.Fatal(err)
	}
	lib = filepath.Join(filepath.Dir(lib), "lib.js")
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fs, other, home := filepath.Join(base, "fs"), filepath.Join(base, "other"), filepath.Join(base, "home", "ada")
	for _, dir := range []string{filepath.Join(fs, "secret"), filepath.Join(fs, "public"), other, home} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	o := proxy.PathOptions{Roots: []string{fs, other}, Home: home}
	spellings := []string{
		fs + "/secret/b.txt", fs + "/public/../secret/b.txt", fs + "//secret/b.txt", fs + "/./secret/b.txt",
		fs + "/SECRET/../secret/b.txt", "~/../../fs/secret/b.txt", "~/../../fs/secret", "~/../../fs/secret/",
		"secret/b.txt", "./secret/../public/a.txt", "../other/a.txt", "", ".", "~bob/a.txt", fs + "/~/a.txt",
		fs + `"`, fs + "/public/a.txt ", `'` + fs + "/a", fs + "/secret/", fs + "/secret/.", "/" + fs + "/secret",
		"../../etc/passwd", fs + "/../../etc/passwd", "C:/x",
	}
	script := `
import { setAllowedDirectories, validatePath } from ` + jsString(lib) + `;
const [roots, paths] = JSON.parse(process.argv[1]);
setAllowedDirectories(roots);
const out = [];
for (const p of paths) {
	try { out.push({ path: await validatePath(p) }); } catch (e) { out.push({ error: e.message }); }
}
console.log(JSON.stringify(out));
`
	in, err := json.Marshal([]any{o.Roots, spellings})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", "--input-type=module", "-e", script, string(in))
	cmd.Env = append(os.Environ(), "HOME="+home)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var opened []struct{ Path, Error string }
	if err := json.Unmarshal(out, &opened); err != nil || len(opened) != len(spellings) {
		t.Fatalf("node said %s (%v)", out, err)
	}
	accepted := 0
	for i, p := range spellings {
		got, err := o.Clean(p)
		if opened[i].Error != "" {
			// Refused by the server: it opens nothing, whatever we read.
			t.Logf("%q: the server refuses it (%s); path.clean says %q, %v", p, opened[i].Error, got, err)
			continue
		}
		accepted++
		if err != nil || got != opened[i].Path {
			t.Errorf("path.clean(%q) = %q, %v; the server opens %q", p, got, err, opened[i].Path)
		}
	}
	if accepted < len(spellings)-4 {
		t.Errorf("the server accepted only %d of %d spellings: the comparison checks little", accepted, len(spellings))
	}
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
