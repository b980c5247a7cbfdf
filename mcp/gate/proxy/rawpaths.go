package proxy

// Finding, in a compiled rule, a path argument compared as a raw string:
// args.path.startsWith('/srv/fs/secret') lets /srv/fs/public/../secret/b.txt
// through, since the upstream resolves the path before it opens it.

import (
	"fmt"
	"strings"
	"unicode"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/types"
)

// RuleWarning is a rule that compiles but compares a path argument as a raw
// string, which the same path spelled another way slips past.
type RuleWarning struct {
	Tool       string // the tool the rule is for
	Expression string // the rule's CEL expression
	Argument   string // the path argument compared, as the rule names it: "destination"
	Function   string // startsWith, endsWith, contains, matches, == or !=
}

// Suggestion is what the rule should say instead.
func (w RuleWarning) Suggestion() string {
	if w.Function == "==" || w.Function == "!=" {
		return fmt.Sprintf("path.clean(args.%s) %s path.clean('…')", w.Argument, w.Function)
	}
	return fmt.Sprintf("path.within(args.%s, '/the/folder')", w.Argument)
}

// rawStringFunctions are the functions that compare a path as a string;
// the operators are named as CEL's checker names them.
var rawStringFunctions = map[string]string{
	"startsWith": "startsWith", "endsWith": "endsWith", "contains": "contains", "matches": "matches",
	"_==_": "==", "_!=_": "!=",
}

// rawPathComparisons walks the checked AST of tool's rule expr and returns
// a warning for each path argument it compares as a raw string: a member of
// args (or of an object or list in args, or an element a macro such as
// exists or all binds) whose name reads as a path, handed to startsWith,
// endsWith, contains, matches, == or != directly rather than through
// path.clean or path.within.
func rawPathComparisons(tool, expr string, ast *cel.Ast) []RuleWarning {
	w := &pathComparisonWalker{tool: tool, expr: expr, seen: map[RuleWarning]bool{}}
	w.walk(ast.NativeRep().Expr(), map[string]binding{})
	return w.warnings
}

// binding is what a comprehension's variable holds: an element of args
// (fromArgs), and the path argument it is an element of, if any.
type binding struct {
	fromArgs bool
	path     string
}

type pathComparisonWalker struct {
	tool, expr string
	seen       map[RuleWarning]bool
	warnings   []RuleWarning
}

func (w *pathComparisonWalker) walk(e celast.Expr, scope map[string]binding) {
	switch e.Kind() {
	case celast.CallKind:
		call := e.AsCall()
		if fn, ok := rawStringFunctions[call.FunctionName()]; ok {
			operands := call.Args()
			if call.IsMemberFunction() {
				operands = append([]celast.Expr{call.Target()}, operands...)
			}
			for _, o := range operands {
				if name, ok := pathArgument(o, scope); ok {
					w.warn(RuleWarning{Tool: w.tool, Expression: w.expr, Argument: name, Function: fn})
				}
			}
		}
		if call.IsMemberFunction() {
			w.walk(call.Target(), scope)
		}
		for _, a := range call.Args() {
			w.walk(a, scope)
		}
	case celast.SelectKind:
		w.walk(e.AsSelect().Operand(), scope)
	case celast.ListKind:
		for _, el := range e.AsList().Elements() {
			w.walk(el, scope)
		}
	case celast.MapKind:
		for _, entry := range e.AsMap().Entries() {
			w.walk(entry.AsMapEntry().Key(), scope)
			w.walk(entry.AsMapEntry().Value(), scope)
		}
	case celast.StructKind:
		for _, f := range e.AsStruct().Fields() {
			w.walk(f.AsStructField().Value(), scope)
		}
	case celast.ComprehensionKind:
		c := e.AsComprehension()
		w.walk(c.IterRange(), scope)
		w.walk(c.AccuInit(), scope)
		inner := make(map[string]binding, len(scope)+1)
		for k, v := range scope {
			inner[k] = v
		}
		b := binding{fromArgs: fromArgs(c.IterRange(), scope)}
		if name, ok := pathArgument(c.IterRange(), scope); ok {
			b.path = name
		}
		inner[c.IterVar()] = b
		delete(inner, c.AccuVar())
		w.walk(c.LoopCondition(), inner)
		w.walk(c.LoopStep(), inner)
		w.walk(c.Result(), inner)
	}
}

func (w *pathComparisonWalker) warn(rw RuleWarning) {
	if !w.seen[rw] {
		w.seen[rw] = true
		w.warnings = append(w.warnings, rw)
	}
}

// fromArgs says whether e is args or a value inside it.
func fromArgs(e celast.Expr, scope map[string]binding) bool {
	switch e.Kind() {
	case celast.IdentKind:
		if b, ok := scope[e.AsIdent()]; ok {
			return b.fromArgs
		}
		return e.AsIdent() == "args"
	case celast.SelectKind:
		return !e.AsSelect().IsTestOnly() && fromArgs(e.AsSelect().Operand(), scope)
	case celast.CallKind:
		call := e.AsCall()
		if inner, ok := unwrapped(call); ok {
			return fromArgs(inner, scope)
		}
		return call.FunctionName() == "_[_]" && fromArgs(call.Args()[0], scope)
	}
	return false
}

// pathArgument is the name of the path argument e is: a member of a value
// from args whose name reads as a path (args.path, args['filePath'],
// args.edits[0].path), an element of one (args.paths[0], or p in
// args.paths.exists(p, …)), or either converted with string() or dyn().
func pathArgument(e celast.Expr, scope map[string]binding) (string, bool) {
	switch e.Kind() {
	case celast.IdentKind:
		b, ok := scope[e.AsIdent()]
		return b.path, ok && b.path != ""
	case celast.SelectKind:
		s := e.AsSelect()
		if !s.IsTestOnly() && fromArgs(s.Operand(), scope) && isPathName(s.FieldName()) {
			return s.FieldName(), true
		}
	case celast.CallKind:
		call := e.AsCall()
		if inner, ok := unwrapped(call); ok {
			return pathArgument(inner, scope)
		}
		if call.FunctionName() != "_[_]" {
			return "", false
		}
		operand, index := call.Args()[0], call.Args()[1]
		if key, ok := stringLiteral(index); ok && fromArgs(operand, scope) && isPathName(key) {
			return key, true
		}
		return pathArgument(operand, scope)
	}
	return "", false
}

// unwrapped is the argument of a string() or dyn() conversion.
func unwrapped(call celast.CallExpr) (celast.Expr, bool) {
	if (call.FunctionName() == "string" || call.FunctionName() == "dyn") && !call.IsMemberFunction() && len(call.Args()) == 1 {
		return call.Args()[0], true
	}
	return nil, false
}

func stringLiteral(e celast.Expr) (string, bool) {
	if e.Kind() != celast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().(types.String)
	return string(s), ok
}

// pathWords are the words of an argument name that say it holds a path.
var pathWords = map[string]bool{
	"path": true, "pathname": true, "filepath": true, "file": true, "filename": true,
	"dir": true, "dirname": true, "directory": true, "folder": true,
	"source": true, "src": true, "destination": true, "dest": true, "dst": true,
}

// isPathName says whether an argument's name reads as a path: one of its
// words (camelCase, snake_case or kebab-case), singular, is a path word:
// path, paths, filePath, source_dir, destinationFolder, directories.
func isPathName(name string) bool {
	for _, word := range nameWords(name) {
		if pathWords[word] || pathWords[singular(word)] {
			return true
		}
	}
	return false
}

// nameWords splits a name into its lower-case words: at anything but a
// letter or digit, and where a lower-case letter meets an upper-case one
// (filePath) or an upper-case run meets a word (URLPath).
func nameWords(name string) []string {
	var words []string
	var word []rune
	runes := []rune(name)
	flush := func() {
		if len(word) > 0 {
			words = append(words, strings.ToLower(string(word)))
			word = word[:0]
		}
	}
	for i, r := range runes {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
			continue
		case unicode.IsUpper(r) && i > 0 && (unicode.IsLower(runes[i-1]) ||
			unicode.IsUpper(runes[i-1]) && i+1 < len(runes) && unicode.IsLower(runes[i+1])):
			flush()
		}
		word = append(word, r)
	}
	flush()
	return words
}

// singular is an English plural's singular, as argument names use them:
// paths, files, directories.
func singular(word string) string {
	switch {
	case strings.HasSuffix(word, "ies"):
		return strings.TrimSuffix(word, "ies") + "y"
	case strings.HasSuffix(word, "s"):
		return strings.TrimSuffix(word, "s")
	}
	return word
}
