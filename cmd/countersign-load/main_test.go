package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The load command files real asks over MCP, bare inserts and bare MCP tool
// calls, with no errors, and reports the three runs and the ratios. It checks what ran, never
// how fast: timing belongs to the command's figures, not to a test.
func TestTheLoadCommandRunsBothPhasesWithoutErrors(t *testing.T) {
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, []string{"-clients", "4", "-duration", "500ms", "-warmup", "100ms"}, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{
		"COUNTERSIGN_ASK_RATE=" + loadAskRate,
		"GOGC=",
		"ratio approvals_create/bare = ",
		"ratio approvals_create/bare MCP tool = ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the report does not say %q:\n%s", want, text)
		}
	}
	// name, clients, requests, req/s, p50, p99, errors, cpu ms/req
	row := regexp.MustCompile(`(?m)^\s*(approvals_create|bare echo\+gorm insert|bare MCP tool\+gorm insert)\s+(\d+)\s+(\d+)\s+\d+\s+[\d.]+\s+[\d.]+\s+(\d+)\s+[\d.]+\s*$`)
	rows := row.FindAllStringSubmatch(text, -1)
	if len(rows) != 3 {
		t.Fatalf("want a row for each run, got %d:\n%s", len(rows), text)
	}
	for _, r := range rows {
		clients, _ := strconv.Atoi(r[2])
		requests, _ := strconv.Atoi(r[3])
		errs, _ := strconv.Atoi(r[4])
		if clients != 4 || requests == 0 || errs != 0 {
			t.Errorf("%s: %d clients, %d requests, %d errors; want 4 clients, some requests and no errors:\n%s", r[1], clients, requests, errs, text)
		}
	}
}

// With -revision 2026-07-28 the clients hold no session: every call, to
// Countersign and to the bare MCP tool, stands alone, with no errors.
func TestTheLoadCommandRunsTheCreateLoadOnTheRevisionWithoutSessions(t *testing.T) {
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, []string{"-revision", "2026-07-28", "-clients", "4", "-duration", "500ms", "-warmup", "100ms"}, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	text := out.String()
	if !strings.Contains(text, "MCP clients of revision 2026-07-28") {
		t.Errorf("the report does not name the revision:\n%s", text)
	}
	row := regexp.MustCompile(`(?m)^\s*(approvals_create|bare MCP tool\+gorm insert)\s+4\s+(\d+)\s+\d+\s+[\d.]+\s+[\d.]+\s+(\d+)\s+[\d.]+\s*$`)
	rows := row.FindAllStringSubmatch(text, -1)
	if len(rows) != 2 {
		t.Fatalf("want a row for approvals_create and the bare MCP tool, got %d:\n%s", len(rows), text)
	}
	for _, r := range rows {
		if r[2] == "0" || r[3] != "0" {
			t.Errorf("%s: %s requests, %s errors; want some requests and no errors:\n%s", r[1], r[2], r[3], text)
		}
	}
	if err := run(ctx, []string{"-revision", "2025-03-26"}, &out); err == nil || !strings.Contains(err.Error(), "-revision") {
		t.Errorf("an unknown revision: %v, want it refused naming -revision", err)
	}
}

// With -tool approval_request the load files requests, with no errors, and
// reports them against the bare insert.
func TestTheLoadCommandFilesRequestsWithApprovalRequest(t *testing.T) {
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, []string{"-tool", "approval_request", "-clients", "4", "-duration", "500ms", "-warmup", "100ms"}, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	text := out.String()
	if !strings.Contains(text, "ratio approval_request/bare = ") {
		t.Errorf("no ratio of approval_request:\n%s", text)
	}
	row := regexp.MustCompile(`(?m)^\s*approval_request\s+4\s+(\d+)\s+\d+\s+[\d.]+\s+[\d.]+\s+(\d+)\s+[\d.]+\s*$`)
	m := row.FindStringSubmatch(text)
	if m == nil || m[1] == "0" || m[2] != "0" {
		t.Fatalf("want an approval_request row with 4 clients, some requests and no errors:\n%s", text)
	}
}

// With -direct the load also calls Store.CreateApproval and the bare gorm
// insert without HTTP and MCP, with no errors, and reports their ratio.
func TestTheLoadCommandMeasuresBothSidesDirectly(t *testing.T) {
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, []string{"-direct", "-clients", "4", "-duration", "500ms", "-warmup", "100ms"}, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	text := out.String()
	if !strings.Contains(text, "ratio direct = ") {
		t.Errorf("no ratio of the direct runs:\n%s", text)
	}
	row := regexp.MustCompile(`(?m)^\s*(approvals_create|direct Store\.CreateApproval|bare echo\+gorm insert|bare MCP tool\+gorm insert|direct gorm insert)\s+4\s+(\d+)\s+\d+\s+[\d.]+\s+[\d.]+\s+(\d+)\s+[\d.]+\s*$`)
	seen := map[string]bool{}
	for _, r := range row.FindAllStringSubmatch(text, -1) {
		if r[2] == "0" || r[3] != "0" {
			t.Errorf("%s: %s requests, %s errors; want some requests and no errors:\n%s", r[1], r[2], r[3], text)
		}
		seen[r[1]] = true
	}
	if len(seen) != 5 {
		t.Fatalf("want a row for each of the five runs, got %v:\n%s", seen, text)
	}
}

func TestTheLoadCommandRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-clients", "0"},
		{"-tool", "approvals_delete"},
		{"-duration", "0s"},
		{"-url", "http://example.com:8080", "-token", "x"},
		{"-url", "http://127.0.0.1:8080"},
		{"-direct", "-url", "http://127.0.0.1:8080", "-token", "x"},
		{"-direct", "-tool", "approval_request"},
		{"extra"},
	} {
		var out bytes.Buffer
		if err := run(context.Background(), args, &out); err == nil {
			t.Errorf("run %q: no error, want a refusal", args)
		}
	}
}

// TestMain runs the agents' side of the waiting run when this test binary is
// started as its child process.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The waiting run opens its agents and timelines in a child process, and
// every decision made while they wait reaches its agent and its timeline:
// the report counts each notice heard, and a lost one fails the run.
func TestTheWaitingRunHearsEveryDecision(t *testing.T) {
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, []string{"-waiting", "12", "-timelines", "8", "-decisions", "6", "-decide-rate", "100"}, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{
		"12 agents waiting",
		"agent (notifications/resources/updated): 6 of 6 heard",
		"live timeline (SSE event): 4 of 4 heard",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the report does not say %q:\n%s", want, text)
		}
	}
	if !regexp.MustCompile(`(?m)^waiting agent\t12\t`).MatchString(text) || !regexp.MustCompile(`(?m)^live timeline\t8\t`).MatchString(text) {
		t.Errorf("no memory row for the agents and the timelines:\n%s", text)
	}
}

// -scale seeds asks in bulk and explains the queries the store runs: on
// SQLite every binding filter, the open list, the inbox and the sweeper read
// their index (migrations 24 and 25), none the whole table; and it times
// every filter without an error. The plans are checked, never the times.
func TestTheScaleRunExplainsEveryListFilterThroughItsIndex(t *testing.T) {
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, []string{"-scale", "3000", "-samples", "3"}, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	text := out.String()
	for name, index := range map[string]string{
		"approvals_list repo+number":    "approvals_repo ",
		"approvals_list repo":           "approvals_repo_seq",
		"approvals_list head":           "approvals_head",
		"approvals_list payload_sha256": "approvals_payload",
		"approvals_list job_id":         "approvals_job",
		"approvals_list status open":    "approvals_open",
		"approvals_list status active":  "approvals_active",
		"inbox of an owner":             "approvals_expiry", // open asks only, by deadline
		"sweeper (ExpireDue)":           "approvals_expiry",
	} {
		i := strings.Index(text, "-- "+name+"\n")
		if i < 0 {
			t.Errorf("no plan for %s:\n%s", name, text)
			continue
		}
		plan := text[i:]
		if j := strings.Index(plan[3:], "\n-- "); j >= 0 {
			plan = plan[:j+3]
		}
		if !strings.Contains(plan, index) {
			t.Errorf("%s does not read %s:\n%s", name, index, plan)
		}
	}
	for _, c := range listCases {
		if !regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(c.name) + `\s+[\d.]+\s+[\d.]+\s+[\d.]+$`).MatchString(text) {
			t.Errorf("no timing row for %s:\n%s", c.name, text)
		}
	}
}
