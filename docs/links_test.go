package docs_test

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// readmeMaxLines is how long the README may grow: it says what Countersign is,
// how to start and where to read on; the rest lives in docs/.
const readmeMaxLines = 250

// TestTheReadmeIsAtMost250Lines keeps the README a front page.
func TestTheReadmeIsAtMost250Lines(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Split(strings.TrimSuffix(string(readme), "\n"), "\n")); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, more than %d: move the detail into a page of docs/ and link to it", n, readmeMaxLines)
	}
}

// TestEveryLinkInTheReadmeAndDocsResolves: every relative link and image in
// README.md and docs/*.md names a file that exists, every #anchor names a
// heading of its page, and every web address is well formed (none is fetched).
func TestEveryLinkInTheReadmeAndDocsResolves(t *testing.T) {
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{"../README.md"}, pages...)
	if len(pages) < 10 {
		t.Fatalf("found only %v: the pages moved", pages)
	}
	checked := 0
	for _, page := range pages {
		links, err := linksOf(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links {
			if err := l.resolve(); err != nil {
				t.Errorf("%s: %v", page, err)
			}
		}
		checked += len(links)
	}
	if checked < 30 {
		t.Errorf("only %d links found in %d pages: the link reader lost them", checked, len(pages))
	}
}

// The README links to every page of docs/, so none is found only by those who
// list the folder.
func TestTheReadmeLinksToEveryPageOfDocs(t *testing.T) {
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	links, err := linksOf("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	linked := map[string]bool{}
	for _, l := range links {
		if path, _, _ := strings.Cut(l.dest, "#"); strings.HasPrefix(path, "docs/") {
			linked[strings.TrimPrefix(path, "docs/")] = true
		}
	}
	for _, page := range pages {
		if !linked[page] {
			t.Errorf("README.md does not link to docs/%s", page)
		}
	}
}

// The check itself refuses each kind of broken link, and reads no link in
// code, so the test above cannot pass by finding nothing wrong.
func TestTheLinkCheckRefusesEveryKindOfBrokenLink(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("img/a.png", "png")
	write("other.md", "# Other page\n\n## 5b. A malicious OAuth client, or someone's redirect\n\n## Twice\n\n## Twice\n\n```\n## Not a heading\n```\n")
	good := write("good.md", "# Good `page`\n\n"+
		"## A stdio host through `countersign gate`\n\n"+
		"[here](#good-page), [there](#a-stdio-host-through-countersign-gate), [other](other.md),\n"+
		"[a section](other.md#5b-a-malicious-oauth-client-or-someones-redirect), [the second](other.md#twice-1),\n"+
		"![a picture](img/a.png), <img src=\"img/a.png\" alt=\"\">, [the web](https://example.com/a?b=c#d),\n"+
		"[mail](mailto:ada@example.com), [`code` in the text](other.md).\n\n"+
		"A link in code is none: `[x](missing.md)`, and\n\n```md\n[y](missing.md)\n```\n")
	links, err := linksOf(good)
	if err != nil {
		t.Fatal(err)
	}
	if len(links) != 10 {
		t.Errorf("read %d links from the good page, want 10: %v", len(links), links)
	}
	for _, l := range links {
		if err := l.resolve(); err != nil {
			t.Errorf("a good link is refused: %v", err)
		}
	}

	for _, c := range []struct{ name, text, want string }{
		{"a missing file", "[x](missing.md)", `"missing.md": no such file`},
		{"a missing image", "![x](img/b.png)", `"img/b.png": no such file`},
		{"a missing image in HTML", `<img src="img/b.png">`, `"img/b.png": no such file`},
		{"an anchor the page lacks", "# Title\n\n[x](#nowhere)", `"#nowhere": no heading`},
		{"an anchor the other page lacks", "[x](other.md#twice-2)", `"other.md#twice-2": no heading`},
		{"an anchor that is only in code", "[x](other.md#not-a-heading)", `"other.md#not-a-heading": no heading`},
		{"an anchor written with capitals", "[x](other.md#Twice)", `"other.md#Twice": no heading`},
		{"an anchor on a file that is no page", "[x](img/a.png#top)", "not a Markdown page"},
		{"a web address with no host", "[x](https:///a)", "not a well-formed web address"},
		{"a web address with a space", "[x](<https://exa mple.com>)", "not a well-formed web address"},
		{"a mail address with no @", "[x](mailto:ada)", "not a well-formed mail address"},
		{"a scheme that is not the web's", "[x](ftp://example.com/a)", "not a relative path"},
		{"a path from the root", "[x](/docs/proof.md)", "not a relative path"},
	} {
		t.Run(c.name, func(t *testing.T) {
			links, err := linksOf(write("bad.md", c.text+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			if len(links) != 1 {
				t.Fatalf("read %d links from %q, want 1", len(links), c.text)
			}
			err = links[0].resolve()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%q: %v, want an error with %q", c.text, err, c.want)
			}
		})
	}
}

// A link is one destination written in a page.
type link struct {
	page, dest string
}

func (l link) String() string { return l.dest }

var (
	// inlineLink is a Markdown link or image: [text](dest) or ![alt](dest "title").
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+"[^"]*")?\s*\)`)
	// htmlLink is the address of an <img src> or <a href> written in HTML.
	htmlLink = regexp.MustCompile(`<(?:img|a)\s[^>]*?\b(?:src|href)="([^"]*)"`)
	// heading is an ATX heading; a closing run of # is not part of its text.
	heading = regexp.MustCompile(`^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$`)
)

// linksOf reads the links of a page, leaving out what is written as code:
// fenced blocks and code spans.
func linksOf(page string) ([]link, error) {
	text, err := os.ReadFile(page)
	if err != nil {
		return nil, err
	}
	var links []link
	for _, para := range strings.Split(strings.Join(prose(string(text)), "\n"), "\n\n") {
		para = withoutCodeSpans(para)
		for _, m := range inlineLink.FindAllStringSubmatch(para, -1) {
			links = append(links, link{page, strings.TrimSuffix(strings.TrimPrefix(m[1], "<"), ">")})
		}
		for _, m := range htmlLink.FindAllStringSubmatch(para, -1) {
			links = append(links, link{page, m[1]})
		}
	}
	return links, nil
}

// prose is a page's lines with those of fenced code blocks blanked.
func prose(text string) []string {
	lines := strings.Split(text, "\n")
	fence := ""
	for i, l := range lines {
		trimmed := strings.TrimLeft(l, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			lines[i] = ""
			continue
		}
		for _, f := range []string{"```", "~~~"} {
			if strings.HasPrefix(trimmed, f) {
				fence = f
				lines[i] = ""
			}
		}
	}
	return lines
}

// withoutCodeSpans drops every code span: a run of backticks up to the next
// run of the same length. A run with no partner is kept as it is.
func withoutCodeSpans(s string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '`')
		if i < 0 {
			return b.String() + s
		}
		open := backticksAt(s, i)
		end := -1
		for j := open; j < len(s); {
			k := strings.IndexByte(s[j:], '`')
			if k < 0 {
				break
			}
			k += j
			if closing := backticksAt(s, k); closing-k == open-i {
				end = closing
				break
			} else {
				j = closing
			}
		}
		if end < 0 {
			b.WriteString(s[:open])
			s = s[open:]
			continue
		}
		b.WriteString(s[:i])
		s = s[end:]
	}
}

// backticksAt is the end of the run of backticks that starts at i.
func backticksAt(s string, i int) int {
	for i < len(s) && s[i] == '`' {
		i++
	}
	return i
}

// resolve says what is wrong with a link, or nil when it leads somewhere.
func (l link) resolve() error {
	u, err := url.Parse(l.dest)
	switch {
	case err != nil && (strings.HasPrefix(l.dest, "http:") || strings.HasPrefix(l.dest, "https:")):
		return fmt.Errorf("%q: not a well-formed web address: %v", l.dest, err)
	case err != nil:
		return fmt.Errorf("%q: %v", l.dest, err)
	case u.Scheme == "http" || u.Scheme == "https":
		if u.Host == "" || strings.ContainsAny(l.dest, " \t") {
			return fmt.Errorf("%q: not a well-formed web address", l.dest)
		}
		return nil
	case u.Scheme == "mailto":
		if !strings.Contains(u.Opaque, "@") {
			return fmt.Errorf("%q: not a well-formed mail address", l.dest)
		}
		return nil
	case u.Scheme != "" || u.Host != "" || strings.HasPrefix(u.Path, "/"):
		return fmt.Errorf("%q: not a relative path to a file of the repository", l.dest)
	}
	target := l.page
	if u.Path != "" {
		target = filepath.Join(filepath.Dir(l.page), filepath.FromSlash(u.Path))
		if _, err := os.Stat(target); err != nil {
			return fmt.Errorf("%q: no such file (%s)", l.dest, target)
		}
	}
	if u.Fragment == "" {
		return nil
	}
	if !strings.HasSuffix(target, ".md") {
		return fmt.Errorf("%q: an anchor on %s, which is not a Markdown page", l.dest, target)
	}
	anchors, err := anchorsOf(target)
	if err != nil {
		return err
	}
	if !slices.Contains(anchors, u.Fragment) {
		return fmt.Errorf("%q: no heading of %s has the anchor %q", l.dest, target, u.Fragment)
	}
	return nil
}

// anchorsOf is the anchors GitHub gives a page's headings: the heading's text
// in lower case, with what is neither a letter, a digit, a space, - nor _
// dropped and spaces made hyphens; a repeated one gets -1, -2 and so on.
func anchorsOf(page string) ([]string, error) {
	text, err := os.ReadFile(page)
	if err != nil {
		return nil, err
	}
	seen := map[string]int{}
	var anchors []string
	for _, l := range prose(string(text)) {
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		a := slug(m[1])
		if n := seen[a]; n > 0 {
			anchors = append(anchors, fmt.Sprintf("%s-%d", a, n))
		} else {
			anchors = append(anchors, a)
		}
		seen[a]++
	}
	return anchors, nil
}

var (
	linkInHeading = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	notInASlug    = regexp.MustCompile(`[^\p{L}\p{M}\p{N}\p{Pc} -]`)
)

// slug is a heading's anchor as GitHub makes it from the heading's text.
func slug(text string) string {
	text = linkInHeading.ReplaceAllString(text, "$1")
	text = strings.NewReplacer("`", "", "*", "").Replace(text)
	text = notInASlug.ReplaceAllString(strings.ToLower(text), "")
	return strings.ReplaceAll(text, " ", "-")
}
