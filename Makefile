# Countersign's build and test entry points. `make test` is the one command
# that runs every check; CI runs exactly that (see .ci/run).

.PHONY: run build binary smoke test halves vet fmt-check generate check-generated fuzz

run: generate
	go run ./cmd/countersign

# A static binary (no cgo: SQLite is pure Go), with no build paths in it,
# stamped with the version git describes. build makes the generated files
# first; binary is the compile alone, from the committed generated files,
# which the Dockerfile's build stage runs (it has no Node).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
build: generate
	@$(MAKE) --no-print-directory binary VERSION=$(VERSION)

binary:
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o countersign ./cmd/countersign

# The static binary starts in an empty folder and answers /readyz (CI runs it).
smoke: build
	@dir=$$(mktemp -d); port=$$((20000 + $$$$ % 20000)); \
	cp countersign "$$dir/"; cd "$$dir"; \
	COUNTERSIGN_ADDR=127.0.0.1:$$port ./countersign serve >log 2>&1 & pid=$$!; \
	ok=; for i in $$(seq 1 100); do \
	  if curl -fsS "http://127.0.0.1:$$port/readyz" >/dev/null 2>&1; then ok=1; break; fi; sleep 0.1; done; \
	kill $$pid; wait $$pid 2>/dev/null; \
	if [ -z "$$ok" ]; then cat log; echo "smoke: the static binary did not answer /readyz"; rm -rf "$$dir"; exit 1; fi; \
	file "$$dir/countersign" 2>/dev/null | grep -q "statically linked" || ldd "$$dir/countersign" 2>&1 | grep -q "not a dynamic" || { echo "smoke: the binary is not static"; rm -rf "$$dir"; exit 1; }; \
	rm -rf "$$dir"; echo "smoke: the static binary $(VERSION) answered /readyz from an empty folder"

# The one test command: vet, formatting, the generated files, the fuzz
# targets and the static binary's smoke check (in CI), the npm packages the
# JavaScript checks use, then every Go
# test under the race detector (which needs a C compiler: gcc).
# Its last line says which halves ran: the PostgreSQL tests skip without
# COUNTERSIGN_TEST_POSTGRES_URL and the browser tests without Chromium
# (outside CI, where both must run).
test: $(if $(CI),check-generated) vet fmt-check $(if $(CI),fuzz) $(if $(CI),smoke) node_modules/.package-lock.json
	CGO_ENABLED=1 go test -race -count=1 ./...
	@$(MAKE) --no-print-directory halves

CHROMIUM ?= /usr/lib/chromium/chromium
halves:
	@ran="SQLite"; skipped=""; \
	if [ -n "$$COUNTERSIGN_TEST_POSTGRES_URL" ]; then ran="$$ran, PostgreSQL"; else skipped="$${skipped:+$$skipped; }PostgreSQL (COUNTERSIGN_TEST_POSTGRES_URL is unset)"; fi; \
	if [ -x "$(CHROMIUM)" ]; then ran="$$ran, browser"; else skipped="$${skipped:+$$skipped; }browser ($(CHROMIUM) is missing)"; fi; \
	echo "make test: the halves that ran: $$ran.$${skipped:+ Skipped: $$skipped.}"

# Runs each fuzz target for FUZZTIME (issue 9: 60 s each in CI): the payload
# validator, the payload's JCS hash, and reading and verifying a proof. The
# three run at once, one worker each (FUZZFLAGS), so CI spends FUZZTIME on
# them rather than three times it; each one's output is printed when it ends.
# Each starts from its seed corpus in the test file; a crash is written under
# the package's testdata/fuzz/ and fails the run.
FUZZTIME ?= 60s
FUZZFLAGS ?= -parallel=1
FUZZ_TARGETS = ask:FuzzParsePayload ask:FuzzCanonicalHash proof:FuzzParseAndVerify
fuzz:
	@dir=$$(mktemp -d); pids=; \
	for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; name=$${t#*:}; \
	  go test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $(FUZZFLAGS) ./$$pkg/ >"$$dir/$$name" 2>&1 & pids="$$pids $$!:$$name"; \
	done; \
	failed=; for p in $$pids; do \
	  if ! wait $${p%%:*}; then failed="$$failed $${p#*:}"; fi; \
	  echo "--- fuzz $${p#*:}"; tail -n 4 "$$dir/$${p#*:}"; \
	done; \
	if [ -n "$$failed" ]; then for n in $$failed; do echo "--- fuzz $$n failed:"; cat "$$dir/$$n"; done; rm -rf "$$dir"; exit 1; fi; \
	rm -rf "$$dir"

vet:
	go vet ./...

fmt-check:
	@files=$$(gofmt -l $$(find . -name '*.go' -not -path './node_modules/*' -not -path './.git/*')); \
	if [ -n "$$files" ]; then echo "gofmt would change these files (run gofmt -w):"; echo "$$files"; exit 1; fi

# npm ci runs only when node_modules is missing or package-lock.json is newer
# than the last install; npm writes node_modules/.package-lock.json on install.
node_modules/.package-lock.json: package-lock.json
	npm ci
	@touch $@

# Every step that writes committed files goes here, so that check-generated
# sees them all: templ components, the esbuild bundle and service worker, and
# the app icons.
generate: node_modules/.package-lock.json
	go tool templ generate
	npm run --silent build
	go run ./web/icongen

# Fails when `make generate` changes a committed file or leaves a new one:
# generated files must be committed as generated.
check-generated: generate
	@git diff --exit-code --stat || { echo "make generate changed committed files: commit its output"; exit 1; }
	@new=$$(git ls-files --others --exclude-standard); \
	if [ -n "$$new" ]; then echo "make generate left files that are not committed:"; echo "$$new"; exit 1; fi
