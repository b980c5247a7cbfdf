package proxy

// The path functions of the rules' CEL: a path read the way a filesystem
// server reads it, so that `..`, `//`, `/./`, a leading `~` or a relative
// spelling cannot carry a call past a rule that compares raw strings.

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
	"unicode"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// PathOptions are what a path means on the upstream: its allowed
// directories, against which it resolves a relative path, and its home
// directory, which a leading `~` names.
type PathOptions struct {
	// Roots are the upstream's allowed directories, absolute, in the order
	// it was given them. Without them a relative path cannot be read, and
	// a predicate that reads one fails (so the call asks).
	Roots []string
	// Home is the directory `~` names. Without it a path starting with
	// `~` cannot be read.
	Home string
}

// windowsDrive is a path server-filesystem refuses on a POSIX host rather
// than read it as a relative file name.
var windowsDrive = regexp.MustCompile(`^[A-Za-z]:([\\/]|$)`)

// Clean is the absolute path @modelcontextprotocol/server-filesystem
// (2026.8.31, validatePath on a POSIX host) opens for p, before it follows
// symbolic links: `~` and `~/…` are under Home (`~user` is not expanded:
// it is a relative name); `.`, `..`, repeated and trailing slashes are
// resolved lexically, `..` stopping at `/`; a relative path (the empty one
// included) is resolved against the first root under which it stays inside
// a root, else against the first root. Case and Unicode spelling are kept.
// A path the server would refuse outright (a NUL byte, a Windows drive) and
// one that needs a root or a home the options lack are errors.
func (o PathOptions) Clean(p string) (string, error) {
	if strings.ContainsRune(p, 0) {
		return "", errors.New("a path with a NUL byte")
	}
	expanded := p
	if p == "~" || strings.HasPrefix(p, "~/") {
		if o.Home == "" {
			return "", fmt.Errorf("%q starts with ~ and the rules name no home directory (paths.home)", p)
		}
		expanded = path.Join(o.Home, p[1:])
	}
	if windowsDrive.MatchString(expanded) {
		return "", fmt.Errorf("%q is a Windows drive path, which the upstream refuses on a POSIX host", p)
	}
	if strings.HasPrefix(expanded, "/") {
		return path.Clean(expanded), nil
	}
	if len(o.Roots) == 0 {
		return "", fmt.Errorf("%q is relative and the rules name no roots (paths.roots) to resolve it against", p)
	}
	for _, root := range o.Roots {
		if candidate := path.Join(root, expanded); insideRoots(candidate, o.Roots) {
			return candidate, nil
		}
	}
	return path.Join(o.Roots[0], expanded), nil
}

// insideRoots is server-filesystem's isPathWithinAllowedDirectories of its
// normalizePath of p: whether p, trimmed as JavaScript trims and stripped of
// one quote at either end, is a root or below one, byte for byte. It picks
// the root a relative path is resolved against.
func insideRoots(p string, roots []string) bool {
	p = strings.TrimFunc(p, isJSSpace)
	if strings.HasPrefix(p, `"`) || strings.HasPrefix(p, `'`) {
		p = p[1:]
	}
	if strings.HasSuffix(p, `"`) || strings.HasSuffix(p, `'`) {
		p = p[:len(p)-1]
	}
	if p == "" || !strings.HasPrefix(p, "/") {
		return false
	}
	p = path.Clean(p)
	for _, root := range roots {
		if p == root || root == "/" || strings.HasPrefix(p, root+"/") {
			return true
		}
	}
	return false
}

// isJSSpace is what JavaScript's String.prototype.trim removes: white space
// (Unicode Zs, tab, vertical tab, form feed, no-break space, the byte order
// mark) and line terminators.
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', '\u2028', '\u2029', '\ufeff':
		return true
	}
	return unicode.Is(unicode.Zs, r)
}

// Within says whether p, read as Clean reads it, is dir or below it: exactly,
// byte for byte, so that /srv/fs/secretive is not within /srv/fs/secret and
// /srv/fs/secret/.. is not either. When p is within dir only once both are
// put in Unicode NFC and case-folded, Within fails rather than answer:
// server-filesystem opens a missing file under the directory whose name is
// NFC-equal to the one asked for, and the file systems of macOS and Windows
// fold case, so such a path may or may not land in dir, and a person
// decides. An empty dir names nothing and fails too.
func (o PathOptions) Within(p, dir string) (bool, error) {
	if dir == "" {
		return false, errors.New("the directory is empty")
	}
	cp, err := o.Clean(p)
	if err != nil {
		return false, err
	}
	cd, err := o.Clean(dir)
	if err != nil {
		return false, err
	}
	if under(cp, cd) {
		return true, nil
	}
	if under(spellingKey(cp), spellingKey(cd)) {
		return false, fmt.Errorf("%q is within %q only when case and Unicode spelling are ignored, as some file systems do", cp, cd)
	}
	return false, nil
}

// under says whether the clean absolute path p is dir or below it.
func under(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// spellingKey is p in Unicode NFC, case-folded: two paths with the same key
// may name the same file on a file system that normalises or folds names.
func spellingKey(p string) string {
	return cases.Fold().String(norm.NFC.String(p))
}

// PathLibrary is the CEL library of the rules' path functions, for paths as
// o reads them:
//
//	path.clean(string) -> string       // the absolute path the upstream opens
//	path.within(string, string) -> bool // whether a path is a directory or below it
//
// A function that cannot read its path fails, and a rule that fails asks.
func PathLibrary(o PathOptions) cel.EnvOption { return cel.Lib(pathLibrary{o}) }

type pathLibrary struct{ opts PathOptions }

// LibraryName makes the library a singleton in an environment.
func (pathLibrary) LibraryName() string { return "countersign.gate.path" }

func (l pathLibrary) CompileOptions() []cel.EnvOption {
	return []cel.EnvOption{
		cel.Function("path.clean",
			cel.Overload("path_clean_string", []*cel.Type{cel.StringType}, cel.StringType,
				cel.UnaryBinding(func(p ref.Val) ref.Val {
					s, ok := p.(types.String)
					if !ok {
						return types.MaybeNoSuchOverloadErr(p)
					}
					c, err := l.opts.Clean(string(s))
					if err != nil {
						return types.NewErr("path.clean: %v", err)
					}
					return types.String(c)
				}))),
		cel.Function("path.within",
			cel.Overload("path_within_string_string", []*cel.Type{cel.StringType, cel.StringType}, cel.BoolType,
				cel.BinaryBinding(func(p, dir ref.Val) ref.Val {
					sp, ok := p.(types.String)
					if !ok {
						return types.MaybeNoSuchOverloadErr(p)
					}
					sd, ok := dir.(types.String)
					if !ok {
						return types.MaybeNoSuchOverloadErr(dir)
					}
					in, err := l.opts.Within(string(sp), string(sd))
					if err != nil {
						return types.NewErr("path.within: %v", err)
					}
					return types.Bool(in)
				}))),
	}
}

func (pathLibrary) ProgramOptions() []cel.ProgramOption { return nil }
