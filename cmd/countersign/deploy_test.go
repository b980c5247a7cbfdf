package main

import (
	"debug/elf"
	"errors"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// There is no docker here: these tests read the Dockerfile, compose.yaml and
// the systemd unit and hold them to the code and to each other, run the
// Dockerfile's build stage's compile on the files its build context holds,
// and have systemd-analyze verify the unit where it is installed.

// instruction is one Dockerfile instruction, its continuation lines joined.
type instruction struct{ op, args string }

// dockerStages reads the Dockerfile into its stages, each a list of instructions.
func dockerStages(t *testing.T, root string) [][]instruction {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var (
		stages [][]instruction
		line   string
	)
	for _, l := range strings.Split(string(b), "\n") {
		if t := strings.TrimSpace(l); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		line += strings.TrimSpace(l)
		if strings.HasSuffix(line, "\\") {
			line = strings.TrimSuffix(line, "\\") + " "
			continue
		}
		op, args, _ := strings.Cut(line, " ")
		line = ""
		in := instruction{strings.ToUpper(op), strings.TrimSpace(args)}
		if in.op == "FROM" {
			stages = append(stages, nil)
		}
		if len(stages) == 0 {
			t.Fatalf("Dockerfile: %s before FROM", in.op)
		}
		stages[len(stages)-1] = append(stages[len(stages)-1], in)
	}
	if len(stages) < 2 {
		t.Fatalf("Dockerfile has %d stages, want a build stage and a final one", len(stages))
	}
	return stages
}

// find returns the args of every instruction op in stage.
func find(stage []instruction, op string) []string {
	var out []string
	for _, in := range stage {
		if in.op == op {
			out = append(out, in.args)
		}
	}
	return out
}

// makeRecipe returns the recipe lines of a Makefile target.
func makeRecipe(t *testing.T, root, target string) (prereqs string, recipe []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if rest, ok := strings.CutPrefix(l, target+":"); ok {
			for _, r := range lines[i+1:] {
				if !strings.HasPrefix(r, "\t") {
					break
				}
				recipe = append(recipe, strings.TrimSpace(r))
			}
			return strings.TrimSpace(rest), recipe
		}
	}
	t.Fatalf("Makefile has no target %s", target)
	return "", nil
}

func TestTheDockerfileBuildsWhatMakeBuildBuilds(t *testing.T) {
	root := repoRoot(t)
	stages := dockerStages(t, root)
	build, final := stages[0], stages[len(stages)-1]

	// The build stage's Go is go.mod's.
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	if from := find(build, "FROM")[0]; goLine == nil || !strings.HasPrefix(from, "golang:"+string(goLine[1])) {
		t.Errorf("build stage FROM %s, want golang:%s (go.mod)", from, goLine[1])
	}
	// It runs make binary, which make build runs after make generate, and
	// binary is the static, trimmed, stamped compile.
	if !slices.ContainsFunc(find(build, "RUN"), func(r string) bool { return strings.HasPrefix(r, "make binary VERSION=") }) {
		t.Errorf("the build stage does not RUN make binary VERSION=…: %q", find(build, "RUN"))
	}
	prereqs, recipe := makeRecipe(t, root, "build")
	if prereqs != "generate" || len(recipe) != 1 || !strings.Contains(recipe[0], "$(MAKE) --no-print-directory binary VERSION=$(VERSION)") {
		t.Errorf("make build is %q: %q, want generate then make binary", prereqs, recipe)
	}
	_, recipe = makeRecipe(t, root, "binary")
	if len(recipe) != 1 || !strings.HasPrefix(recipe[0], "CGO_ENABLED=0 go build -trimpath ") || !strings.Contains(recipe[0], "-X main.version=$(VERSION)") {
		t.Errorf("make binary is %q, want the static, trimmed, stamped go build", recipe)
	}

	// The final stage: distroless or scratch, not root, /data a volume
	// where COUNTERSIGN_DATA points, the port COUNTERSIGN_ADDR listens on
	// exposed, and the binary's own healthcheck.
	if from := find(final, "FROM")[0]; !strings.HasPrefix(from, "gcr.io/distroless/static") && from != "scratch" {
		t.Errorf("final stage FROM %s, want distroless/static or scratch", from)
	}
	users := find(final, "USER")
	if len(users) == 0 || slices.ContainsFunc(users, func(u string) bool { return u == "root" || u == "0" || strings.HasPrefix(u, "0:") }) {
		t.Errorf("final stage USER %q, want a non-root user", users)
	}
	env := map[string]string{}
	for _, e := range find(final, "ENV") {
		for _, kv := range strings.Fields(e) {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
	}
	if env["COUNTERSIGN_DATA"] != "/data" {
		t.Errorf("COUNTERSIGN_DATA=%q in the image, want /data", env["COUNTERSIGN_DATA"])
	}
	if v := find(final, "VOLUME"); len(v) != 1 || v[0] != `["/data"]` {
		t.Errorf("VOLUME %q, want [\"/data\"]", v)
	}
	_, port, err := net.SplitHostPort(env["COUNTERSIGN_ADDR"])
	if err != nil || !slices.Contains(find(final, "EXPOSE"), port) {
		t.Errorf("EXPOSE %q does not match COUNTERSIGN_ADDR=%q", find(final, "EXPOSE"), env["COUNTERSIGN_ADDR"])
	}
	if hc := find(final, "HEALTHCHECK"); len(hc) != 1 || !strings.HasSuffix(hc[0], `CMD ["/countersign", "healthcheck"]`) {
		t.Errorf("HEALTHCHECK %q, want CMD [\"/countersign\", \"healthcheck\"]", hc)
	}
	if ep := find(final, "ENTRYPOINT"); len(ep) != 1 || ep[0] != `["/countersign"]` || !slices.ContainsFunc(find(final, "COPY"), func(c string) bool { return strings.HasSuffix(c, " /countersign") }) {
		t.Errorf("ENTRYPOINT %q is not the binary the stage copies in", ep)
	}
}

// dockerIgnored reports whether .dockerignore keeps path out of the build context.
func dockerIgnored(patterns []string, path string) bool {
	for _, p := range patterns {
		for dir := path; dir != "."; dir = filepath.Dir(dir) {
			if ok, _ := filepath.Match(p, dir); ok {
				return true
			}
		}
	}
	return false
}

// The build stage's compile, run on exactly the committed files the build
// context holds: the generated files are there, and the binary is static
// and stamped.
func TestTheDockerBuildStageCompilesFromItsContext(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the whole binary")
	}
	root := repoRoot(t)
	ignore, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, l := range strings.Split(string(ignore), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			patterns = append(patterns, l)
		}
	}
	files, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("git ls-files: %v (not a git checkout)", err)
	}
	context := t.TempDir()
	for _, f := range strings.Split(strings.TrimRight(string(files), "\x00"), "\x00") {
		if dockerIgnored(patterns, f) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the work tree, not yet committed
		} else if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(context, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(context, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	make := exec.Command("make", "binary", "VERSION=docker-test")
	make.Dir = context
	if out, err := make.CombinedOutput(); err != nil {
		t.Fatalf("make binary in the build context: %v\n%s", err, out)
	}
	bin := filepath.Join(context, "countersign")
	if out, err := exec.Command(bin, "version").Output(); err != nil || strings.TrimSpace(string(out)) != "countersign docker-test" {
		t.Errorf("countersign version = %q (%v), want countersign docker-test", out, err)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("the binary asks for a dynamic loader: distroless/static has none")
		}
	}
}

func TestComposeRunsCountersignOnItsPostgreSQL(t *testing.T) {
	root := repoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	type service struct {
		Build       any               `yaml:"build"`
		Image       string            `yaml:"image"`
		Environment map[string]string `yaml:"environment"`
		Volumes     []string          `yaml:"volumes"`
		Ports       []string          `yaml:"ports"`
		DependsOn   map[string]struct {
			Condition string `yaml:"condition"`
		} `yaml:"depends_on"`
		Healthcheck struct {
			Test []string `yaml:"test"`
		} `yaml:"healthcheck"`
	}
	var compose struct {
		Services map[string]service `yaml:"services"`
		Volumes  map[string]any     `yaml:"volumes"`
	}
	if err := yaml.Unmarshal(b, &compose); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	cs, pg := compose.Services["countersign"], compose.Services["postgres"]
	if cs.Build == nil || !strings.HasPrefix(pg.Image, "postgres:") {
		t.Fatalf("services: countersign built here and postgres from its image, got %+v", compose.Services)
	}
	if !slices.Contains(pg.Healthcheck.Test, "pg_isready -U countersign -d countersign") {
		t.Errorf("postgres healthcheck %q, want pg_isready", pg.Healthcheck.Test)
	}
	if !slices.Equal(cs.Healthcheck.Test, []string{"CMD", "/countersign", "healthcheck"}) {
		t.Errorf("countersign healthcheck %q, want the binary's", cs.Healthcheck.Test)
	}
	if cs.DependsOn["postgres"].Condition != "service_healthy" {
		t.Errorf("countersign does not wait for a healthy postgres: %+v", cs.DependsOn)
	}
	// The URL reaches the postgres service, its user and its database.
	u, err := url.Parse(strings.ReplaceAll(cs.Environment["COUNTERSIGN_DATABASE_URL"], "${POSTGRES_PASSWORD}", "pw"))
	if err != nil || u.Scheme != "postgres" || u.Host != "postgres:5432" || u.User.Username() != pg.Environment["POSTGRES_USER"] ||
		u.Path != "/"+pg.Environment["POSTGRES_DB"] || !strings.Contains(pg.Environment["POSTGRES_PASSWORD"], "POSTGRES_PASSWORD") {
		t.Errorf("COUNTERSIGN_DATABASE_URL %q does not reach the postgres service as %s/%s", cs.Environment["COUNTERSIGN_DATABASE_URL"], pg.Environment["POSTGRES_USER"], pg.Environment["POSTGRES_DB"])
	}
	for name, s := range map[string]service{"countersign": cs, "postgres": pg} {
		want := map[string]string{"countersign": "/data", "postgres": "/var/lib/postgresql/data"}[name]
		if len(s.Volumes) != 1 || s.Volumes[0] != name+":"+want {
			t.Errorf("%s volumes %q, want the named volume %s at %s", name, s.Volumes, name, want)
		}
		if _, ok := compose.Volumes[name]; !ok {
			t.Errorf("volume %s is not declared", name)
		}
	}
	if len(cs.Ports) != 1 || !strings.HasPrefix(cs.Ports[0], "127.0.0.1:") {
		t.Errorf("countersign ports %q, want one on loopback, behind the proxy", cs.Ports)
	}
}

// unitDirectives reads a systemd unit's [Service] section: each key's values
// in order.
func unitDirectives(t *testing.T, path string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	section := ""
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		switch {
		case l == "" || strings.HasPrefix(l, "#"):
		case strings.HasPrefix(l, "["):
			section = l
		case section == "[Service]":
			k, v, _ := strings.Cut(l, "=")
			out[k] = append(out[k], v)
		}
	}
	return out
}

func TestTheSystemdUnitIsHardened(t *testing.T) {
	unit := filepath.Join(repoRoot(t), "deploy", "countersign.service")
	d := unitDirectives(t, unit)
	for key, want := range map[string]string{
		"ExecStart": "/usr/local/bin/countersign serve", "DynamicUser": "yes", "StateDirectory": "countersign",
		"ProtectSystem": "strict", "NoNewPrivileges": "yes", "ProtectHome": "yes", "PrivateTmp": "yes",
		"PrivateDevices": "yes", "RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX", "CapabilityBoundingSet": "",
		"AmbientCapabilities": "", "MemoryDenyWriteExecute": "yes", "LockPersonality": "yes", "RestrictNamespaces": "yes",
		"SystemCallArchitectures": "native", "SystemCallErrorNumber": "EPERM",
	} {
		if v := d[key]; len(v) != 1 || v[0] != want {
			t.Errorf("%s=%q, want %q", key, v, want)
		}
	}
	if !slices.Contains(d["SystemCallFilter"], "@system-service") {
		t.Errorf("SystemCallFilter=%q, want @system-service", d["SystemCallFilter"])
	}
	if !slices.Contains(d["Environment"], "COUNTERSIGN_DATA=%S/countersign") {
		t.Errorf("Environment=%q: COUNTERSIGN_DATA is not the StateDirectory", d["Environment"])
	}
	// systemd-analyze verify, where systemd is installed, with the test's
	// binary at ExecStart (verify checks that it is there); any warning fails.
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("systemd-analyze is not installed: the unit is not verified")
		return
	}
	b, err := os.ReadFile(unit)
	if err != nil {
		t.Fatal(err)
	}
	copyUnit := filepath.Join(t.TempDir(), "countersign.service")
	if err := os.WriteFile(copyUnit, []byte(strings.ReplaceAll(string(b), "/usr/local/bin/countersign", binary)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", copyUnit).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}
