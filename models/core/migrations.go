package core

import (
	"gorm.io/gorm"
)

// Migrations are appended, never edited: a database that ran version N keeps
// the schema version N made.
var Migrations = []migration{
	{1, "accounts, persons, agents, approvals, events", `
CREATE TABLE accounts (
	id TEXT PRIMARY KEY,
	name TEXT NOT NULL UNIQUE,
	allow_private_evidence BOOLEAN NOT NULL DEFAULT FALSE,
	created_at {{time}} NOT NULL
);
CREATE TABLE persons (
	id TEXT PRIMARY KEY,
	subject TEXT NOT NULL UNIQUE,
	display_name TEXT NOT NULL DEFAULT '',
	created_at {{time}} NOT NULL
);
CREATE TABLE memberships (
	account_id TEXT NOT NULL REFERENCES accounts(id),
	person_id TEXT NOT NULL REFERENCES persons(id),
	role TEXT NOT NULL,
	created_at {{time}} NOT NULL,
	PRIMARY KEY (account_id, person_id)
);
CREATE INDEX memberships_person ON memberships (person_id);
CREATE TABLE agents (
	id TEXT PRIMARY KEY,
	account_id TEXT NOT NULL REFERENCES accounts(id),
	name TEXT NOT NULL,
	subject TEXT NOT NULL,
	token_hash TEXT NOT NULL UNIQUE,
	scopes TEXT NOT NULL,
	disabled BOOLEAN NOT NULL DEFAULT FALSE,
	disabled_reason TEXT NOT NULL DEFAULT '',
	created_at {{time}} NOT NULL,
	UNIQUE (account_id, name)
);
CREATE TABLE approvals (
	seq {{serial}},
	id TEXT NOT NULL UNIQUE,
	account_id TEXT NOT NULL REFERENCES accounts(id),
	kind TEXT NOT NULL,
	title TEXT NOT NULL,
	summary TEXT NOT NULL DEFAULT '',
	approve_means TEXT NOT NULL DEFAULT '',
	deny_means TEXT NOT NULL DEFAULT '',
	payload {{json}} NOT NULL,
	payload_sha256 TEXT NOT NULL,
	context {{json}},
	links {{json}},
	agent_label TEXT NOT NULL DEFAULT '',
	requester_id TEXT NOT NULL REFERENCES agents(id),
	requester_subject TEXT NOT NULL,
	asked_of TEXT NOT NULL DEFAULT '',
	status TEXT NOT NULL,
	decision TEXT NOT NULL DEFAULT '',
	decided_by TEXT NOT NULL DEFAULT '',
	decided_at {{time}},
	note TEXT NOT NULL DEFAULT '',
	proof {{json}},
	supersedes TEXT NOT NULL DEFAULT '',
	superseded_by TEXT NOT NULL DEFAULT '',
	repo_key TEXT NOT NULL DEFAULT '',
	pr_number BIGINT NOT NULL DEFAULT 0,
	head TEXT NOT NULL DEFAULT '',
	job_id TEXT NOT NULL DEFAULT '',
	priority INTEGER NOT NULL DEFAULT 0,
	version INTEGER NOT NULL DEFAULT 1,
	expires_at {{time}} NOT NULL,
	created_at {{time}} NOT NULL,
	updated_at {{time}} NOT NULL
);
CREATE INDEX approvals_account ON approvals (account_id, seq);
CREATE INDEX approvals_status ON approvals (account_id, status, seq);
CREATE INDEX approvals_kind ON approvals (account_id, kind, seq);
CREATE INDEX approvals_repo ON approvals (account_id, repo_key, pr_number, seq);
CREATE INDEX approvals_head ON approvals (account_id, head, seq);
CREATE INDEX approvals_payload ON approvals (account_id, payload_sha256, seq);
CREATE INDEX approvals_job ON approvals (account_id, job_id, seq);
CREATE INDEX approvals_asked_of ON approvals (account_id, asked_of, status, seq);
CREATE INDEX approvals_expiry ON approvals (status, expires_at);
CREATE TABLE events (
	seq {{serial}},
	account_id TEXT NOT NULL REFERENCES accounts(id),
	approval_id TEXT NOT NULL,
	at {{time}} NOT NULL,
	actor_kind TEXT NOT NULL,
	actor TEXT NOT NULL,
	step TEXT NOT NULL,
	from_status TEXT NOT NULL DEFAULT '',
	to_status TEXT NOT NULL DEFAULT '',
	note TEXT NOT NULL DEFAULT '',
	data {{json}}
);
CREATE INDEX events_approval ON events (approval_id, seq);
CREATE INDEX events_account ON events (account_id, seq)
`},
	{2, "device keys, web sessions, invites, ceremonies, decision challenges", `
CREATE TABLE device_keys (
	id TEXT PRIMARY KEY,
	person_id TEXT NOT NULL REFERENCES persons(id),
	name TEXT NOT NULL,
	credential {{json}} NOT NULL,
	public_key TEXT NOT NULL,
	sign_count BIGINT NOT NULL DEFAULT 0,
	backup_eligible BOOLEAN NOT NULL DEFAULT FALSE,
	backed_up BOOLEAN NOT NULL DEFAULT FALSE,
	created_at {{time}} NOT NULL,
	last_used_at {{time}},
	removed_at {{time}}
);
CREATE INDEX device_keys_person ON device_keys (person_id);
CREATE TABLE web_sessions (
	id_hash TEXT PRIMARY KEY,
	person_id TEXT NOT NULL REFERENCES persons(id),
	account_id TEXT NOT NULL REFERENCES accounts(id),
	created_at {{time}} NOT NULL,
	last_seen_at {{time}} NOT NULL,
	expires_at {{time}} NOT NULL
);
CREATE INDEX web_sessions_person ON web_sessions (person_id);
CREATE TABLE invites (
	token_hash TEXT PRIMARY KEY,
	account_id TEXT NOT NULL REFERENCES accounts(id),
	role TEXT NOT NULL,
	subject TEXT NOT NULL DEFAULT '',
	created_by TEXT NOT NULL,
	created_at {{time}} NOT NULL,
	expires_at {{time}} NOT NULL,
	used_at {{time}},
	used_by TEXT NOT NULL DEFAULT ''
);
CREATE INDEX invites_account ON invites (account_id, created_at);
CREATE TABLE ceremonies (
	id_hash TEXT PRIMARY KEY,
	kind TEXT NOT NULL,
	subject TEXT NOT NULL DEFAULT '',
	data {{json}} NOT NULL,
	expires_at {{time}} NOT NULL
);
CREATE TABLE decision_challenges (
	nonce TEXT PRIMARY KEY,
	approval_id TEXT NOT NULL,
	person_id TEXT NOT NULL,
	decision TEXT NOT NULL,
	payload_sha256 TEXT NOT NULL,
	created_at {{time}} NOT NULL,
	expires_at {{time}} NOT NULL,
	used_at {{time}}
);
CREATE INDEX decision_challenges_expiry ON decision_challenges (expires_at);
CREATE INDEX events_account_step ON events (account_id, step, seq)
`},
	{3, "agents can be deleted", `
ALTER TABLE agents ADD COLUMN deleted_at {{time}}
`},
	{4, "web push subscriptions, the push outbox, settings", `
CREATE TABLE settings (
	name TEXT PRIMARY KEY,
	value TEXT NOT NULL
);
CREATE TABLE push_subscriptions (
	id TEXT PRIMARY KEY,
	person_id TEXT NOT NULL REFERENCES persons(id),
	endpoint TEXT NOT NULL UNIQUE,
	p256dh TEXT NOT NULL,
	auth TEXT NOT NULL,
	user_agent TEXT NOT NULL DEFAULT '',
	created_at {{time}} NOT NULL,
	last_success_at {{time}},
	failures INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX push_subscriptions_person ON push_subscriptions (person_id);
CREATE TABLE push_jobs (
	seq {{serial}},
	subscription_id TEXT NOT NULL,
	person_id TEXT NOT NULL,
	approval_id TEXT NOT NULL DEFAULT '',
	event TEXT NOT NULL,
	body TEXT NOT NULL,
	urgency TEXT NOT NULL,
	topic TEXT NOT NULL DEFAULT '',
	created_at {{time}} NOT NULL,
	not_before {{time}} NOT NULL,
	expires_at {{time}} NOT NULL,
	attempts INTEGER NOT NULL DEFAULT 0,
	leased_until {{time}},
	done_at {{time}},
	outcome TEXT NOT NULL DEFAULT '',
	last_error TEXT NOT NULL DEFAULT ''
);
CREATE INDEX push_jobs_due ON push_jobs (done_at, not_before);
CREATE INDEX push_jobs_person ON push_jobs (person_id, event, created_at);
CREATE INDEX push_jobs_approval ON push_jobs (approval_id, event);
CREATE INDEX push_jobs_subscription ON push_jobs (subscription_id, event)
`},
	{5, "auto-approve policies", `
CREATE TABLE policies (
	id TEXT PRIMARY KEY,
	account_id TEXT NOT NULL REFERENCES accounts(id),
	approval_id TEXT NOT NULL UNIQUE,
	scope {{json}} NOT NULL,
	requester TEXT NOT NULL,
	device TEXT NOT NULL DEFAULT '',
	signer_id TEXT NOT NULL REFERENCES persons(id),
	signer_subject TEXT NOT NULL,
	credential_id TEXT NOT NULL,
	signed_at {{time}} NOT NULL,
	expires_at {{time}} NOT NULL,
	revoked_at {{time}},
	revoked_by TEXT NOT NULL DEFAULT '',
	revoke_note TEXT NOT NULL DEFAULT '',
	replaces TEXT NOT NULL DEFAULT '',
	replaced_by TEXT NOT NULL DEFAULT '',
	approved_count INTEGER NOT NULL DEFAULT 0,
	last_approved_at {{time}},
	created_at {{time}} NOT NULL
);
CREATE INDEX policies_account ON policies (account_id, created_at)
`},
	{6, "indexes for an ask's timeline, a repo's asks in order, and open asks", `
CREATE INDEX events_approval_account ON events (approval_id, account_id, seq);
CREATE INDEX approvals_repo_seq ON approvals (account_id, repo_key, seq, status);
CREATE INDEX approvals_open ON approvals (account_id, seq) WHERE status IN ('pending', 'question')
`},
	{7, "drop events_approval: events_approval_account serves every read of an ask's timeline", `
DROP INDEX events_approval
`},
	{8, "the audit log's hash chain", `
CREATE TABLE audit_chain (
	seq BIGINT PRIMARY KEY,
	account_id TEXT NOT NULL,
	pos BIGINT NOT NULL,
	digest TEXT NOT NULL,
	hash TEXT NOT NULL,
	sealed_at {{time}} NOT NULL
);
CREATE UNIQUE INDEX audit_chain_position ON audit_chain (account_id, pos)
`},
	{9, "invite kinds: a new person, or a role for an existing person who signs in to accept", `
ALTER TABLE invites ADD COLUMN kind TEXT NOT NULL DEFAULT 'new_person'
`},
	{10, "who added each passkey; grants to add one: a fresh assertion, or a one-time device link", `
ALTER TABLE device_keys ADD COLUMN added_by TEXT NOT NULL DEFAULT '';
CREATE TABLE device_grants (
	token_hash TEXT PRIMARY KEY,
	kind TEXT NOT NULL,
	person_id TEXT NOT NULL REFERENCES persons(id),
	session_hash TEXT NOT NULL DEFAULT '',
	authorised_by TEXT NOT NULL,
	created_at {{time}} NOT NULL,
	expires_at {{time}} NOT NULL,
	used_at {{time}}
);
CREATE INDEX device_grants_expiry ON device_grants (expires_at)
`},
	{11, "indexes for the sweep of expired ceremonies and web sessions", `
CREATE INDEX ceremonies_expiry ON ceremonies (expires_at);
CREATE INDEX web_sessions_expiry ON web_sessions (expires_at)
`},
	{12, "decision challenges by ask: an ask that leaves pending deletes its unspent nonces", `
CREATE INDEX decision_challenges_approval ON decision_challenges (approval_id)
`},
	{13, "agent sessions, agent requests with their idempotency keys and instructions, the work board", `
CREATE TABLE agent_sessions (
	id TEXT PRIMARY KEY,
	account_id TEXT NOT NULL REFERENCES accounts(id),
	agent_id TEXT NOT NULL REFERENCES agents(id),
	agent_subject TEXT NOT NULL,
	label TEXT NOT NULL DEFAULT '',
	started_at {{time}} NOT NULL,
	heartbeat_at {{time}} NOT NULL,
	ended_at {{time}},
	end_reason TEXT NOT NULL DEFAULT ''
);
CREATE INDEX agent_sessions_open ON agent_sessions (account_id, ended_at, heartbeat_at);
CREATE INDEX agent_sessions_idle ON agent_sessions (heartbeat_at) WHERE ended_at IS NULL;
CREATE TABLE agent_requests (
	approval_id TEXT PRIMARY KEY,
	account_id TEXT NOT NULL REFERENCES accounts(id),
	agent_id TEXT NOT NULL REFERENCES agents(id),
	idempotency_key TEXT NOT NULL,
	arguments_sha256 TEXT NOT NULL,
	session_id TEXT NOT NULL DEFAULT '',
	method TEXT NOT NULL DEFAULT '',
	item_id TEXT NOT NULL DEFAULT '',
	column_key TEXT NOT NULL DEFAULT '',
	executed BOOLEAN NOT NULL DEFAULT FALSE,
	result TEXT NOT NULL DEFAULT '',
	delivered_at {{time}},
	created_at {{time}} NOT NULL
);
CREATE UNIQUE INDEX agent_requests_key ON agent_requests (agent_id, idempotency_key);
CREATE INDEX agent_requests_session ON agent_requests (session_id, delivered_at);
CREATE TABLE work_columns (
	id TEXT PRIMARY KEY,
	account_id TEXT NOT NULL REFERENCES accounts(id),
	key TEXT NOT NULL,
	name TEXT NOT NULL,
	position INTEGER NOT NULL,
	created_at {{time}} NOT NULL,
	UNIQUE (account_id, key)
);
CREATE TABLE work_items (
	id TEXT PRIMARY KEY,
	account_id TEXT NOT NULL REFERENCES accounts(id),
	column_key TEXT NOT NULL,
	title TEXT NOT NULL,
	description TEXT NOT NULL DEFAULT '',
	created_at {{time}} NOT NULL,
	updated_at {{time}} NOT NULL
);
CREATE INDEX work_items_column ON work_items (account_id, column_key, created_at);
CREATE TABLE work_item_history (
	seq {{serial}},
	account_id TEXT NOT NULL REFERENCES accounts(id),
	item_id TEXT NOT NULL,
	at {{time}} NOT NULL,
	actor_kind TEXT NOT NULL,
	actor TEXT NOT NULL,
	action TEXT NOT NULL,
	from_column TEXT NOT NULL DEFAULT '',
	to_column TEXT NOT NULL DEFAULT '',
	approval_id TEXT NOT NULL DEFAULT '',
	note TEXT NOT NULL DEFAULT ''
);
CREATE INDEX work_item_history_item ON work_item_history (account_id, item_id, seq)
`},
	{14, "runners: enrolled executors of pinned runs, each with its Ed25519 key and token; the runner a run names", `
CREATE TABLE runners (
	id TEXT PRIMARY KEY,
	account_id TEXT NOT NULL REFERENCES accounts(id),
	name TEXT NOT NULL,
	public_key TEXT NOT NULL,
	token_hash TEXT NOT NULL UNIQUE,
	disabled BOOLEAN NOT NULL DEFAULT FALSE,
	disabled_by TEXT NOT NULL DEFAULT '',
	disabled_at {{time}},
	created_by TEXT NOT NULL DEFAULT '',
	created_at {{time}} NOT NULL,
	UNIQUE (account_id, name)
);
ALTER TABLE approvals ADD COLUMN runner_id TEXT NOT NULL DEFAULT '';
CREATE INDEX approvals_runner ON approvals (runner_id, seq) WHERE runner_id <> ''
`},
	{15, "the ACME cache (account key, certificates, challenge tokens), shared by the instances on one PostgreSQL", `
CREATE TABLE acme_cache (
	name TEXT PRIMARY KEY,
	data {{bytes}} NOT NULL,
	updated_at {{time}} NOT NULL
)
`},
	{16, "the signatures of recorded runner reports, so that a replayed report is refused", `
CREATE TABLE runner_report_signatures (
	signature TEXT PRIMARY KEY,
	approval_id TEXT NOT NULL,
	expires_at {{time}} NOT NULL
);
CREATE INDEX runner_report_signatures_expiry ON runner_report_signatures (expires_at)
`},
	{17, "one-time push links: the hash of the token an ask's push carries, bound to the ask, the push subscription and the person, with its short life", `
CREATE TABLE push_links (
	id TEXT PRIMARY KEY,
	token_hash TEXT NOT NULL UNIQUE,
	account_id TEXT NOT NULL REFERENCES accounts(id),
	approval_id TEXT NOT NULL,
	person_id TEXT NOT NULL,
	subscription_id TEXT NOT NULL,
	created_at {{time}} NOT NULL,
	expires_at {{time}} NOT NULL,
	opened_at {{time}},
	spent_at {{time}}
);
CREATE INDEX push_links_subscription ON push_links (subscription_id, approval_id);
CREATE INDEX push_links_person ON push_links (person_id);
CREATE INDEX push_links_expiry ON push_links (expires_at)
`},
	{18, "persons' subjects unique under Unicode case folding and NFKC: subject_key, filled by fillSubjectKeys (NULL on rows that clash)", `
ALTER TABLE persons ADD COLUMN subject_key TEXT;
CREATE UNIQUE INDEX persons_subject_folded ON persons (subject_key)
`},
	{19, "agents made for a person (agent create --for, and the clients a person connects by OAuth): for_person_id, whose approvals do not count towards a rule's quorum on that agent's asks", `
ALTER TABLE agents ADD COLUMN for_person_id TEXT REFERENCES persons(id)
`},
	{20, "approval rules (approval_rules: an account's rules, spec as JSON; a built-in's id with removed set switches it off) and the requirement a rule froze into an ask, with when it escalated and was last reminded", `
CREATE TABLE approval_rules (
	account_id TEXT NOT NULL REFERENCES accounts(id),
	id TEXT NOT NULL,
	spec {{json}} NOT NULL,
	builtin BOOLEAN NOT NULL DEFAULT FALSE,
	removed BOOLEAN NOT NULL DEFAULT FALSE,
	created_by TEXT NOT NULL DEFAULT '',
	created_at {{time}} NOT NULL,
	updated_at {{time}} NOT NULL,
	PRIMARY KEY (account_id, id)
);
ALTER TABLE approvals ADD COLUMN requirement {{json}};
ALTER TABLE approvals ADD COLUMN escalated_at {{time}};
ALTER TABLE approvals ADD COLUMN reminded_at {{time}}
`},
	{21, "approval signatures: each person's signed answer on an ask a rule covers, one per person (the same person never counts twice), in the order they landed", `
CREATE TABLE approval_signatures (
	seq {{serial}},
	account_id TEXT NOT NULL REFERENCES accounts(id),
	approval_id TEXT NOT NULL,
	person_id TEXT NOT NULL REFERENCES persons(id),
	subject TEXT NOT NULL,
	credential_id TEXT NOT NULL,
	decision TEXT NOT NULL,
	proof {{json}} NOT NULL,
	created_at {{time}} NOT NULL,
	UNIQUE (approval_id, person_id)
);
CREATE INDEX approval_signatures_approval ON approval_signatures (approval_id, seq)
`},
	{22, "OAuth: the clients registered dynamically (RFC 7591), and the clients persons connected, each an agent made for that person", `
CREATE TABLE oauth_clients (
	id TEXT PRIMARY KEY,
	name TEXT NOT NULL,
	redirect_uris TEXT NOT NULL,
	created_at {{time}} NOT NULL
);
CREATE TABLE oauth_connections (
	agent_id TEXT PRIMARY KEY REFERENCES agents(id),
	account_id TEXT NOT NULL REFERENCES accounts(id),
	person_id TEXT NOT NULL REFERENCES persons(id),
	client_id TEXT NOT NULL,
	client_name TEXT NOT NULL,
	redirect_host TEXT NOT NULL,
	verified BOOLEAN NOT NULL,
	created_at {{time}} NOT NULL
);
CREATE INDEX oauth_connections_person ON oauth_connections (person_id, account_id)
`},
	{23, "OAuth: authorization codes and the hashes of access and refresh tokens, by grant family", `
CREATE TABLE oauth_codes (
	id TEXT PRIMARY KEY,
	code_hash TEXT NOT NULL UNIQUE,
	agent_id TEXT NOT NULL REFERENCES agents(id),
	client_id TEXT NOT NULL,
	redirect_uri TEXT NOT NULL,
	code_challenge TEXT NOT NULL,
	resource TEXT NOT NULL,
	scopes TEXT NOT NULL,
	created_at {{time}} NOT NULL,
	expires_at {{time}} NOT NULL,
	used_at {{time}}
);
CREATE INDEX oauth_codes_expiry ON oauth_codes (expires_at);
CREATE TABLE oauth_tokens (
	id TEXT PRIMARY KEY,
	token_hash TEXT NOT NULL UNIQUE,
	kind TEXT NOT NULL,
	family_id TEXT NOT NULL,
	agent_id TEXT NOT NULL REFERENCES agents(id),
	client_id TEXT NOT NULL,
	resource TEXT NOT NULL,
	scopes TEXT NOT NULL,
	created_at {{time}} NOT NULL,
	expires_at {{time}} NOT NULL,
	used_at {{time}},
	revoked_at {{time}}
);
CREATE INDEX oauth_tokens_family ON oauth_tokens (family_id);
CREATE INDEX oauth_tokens_agent ON oauth_tokens (agent_id);
CREATE INDEX oauth_tokens_expiry ON oauth_tokens (expires_at)
`},
	// Every ask wrote 13 index entries on approvals and 4 on events, and on
	// PostgreSQL locked its account's and its agent's rows FOR KEY SHARE (the
	// foreign keys), so concurrent asks of one account queued on one row.
	// Kept: the id, the account's list (account_id, seq), the bindings an
	// agent looks an ask up by (repo and number, repo alone in order with
	// its status, head, payload hash, job), and the open asks (approvals_open: the open list, the inbox, the
	// waiting count, an agent's asks to cancel) and their expiry (the
	// sweeper, which reads only the due ones however many are open). Made
	// partial, so that an ask writes an entry only where it can be found:
	// the bindings when set, the expiry while open, the active asks (a new
	// ask is pending: no entry).
	// Dropped: status (open and active have their partial indexes; closed is
	// most of the table, read through approvals_account), kind (a list by
	// kind reads the account's asks newest first) and asked_of (the inbox
	// sorts by deadline, so it read every open ask it matched with that
	// index too; now it reads the open asks through approvals_open or
	// approvals_expiry).
	// The foreign keys approvals.account_id and approvals.requester_id go on
	// PostgreSQL: no account and no agent is ever deleted (an agent is
	// retired with deleted_at, and keeps its row), and the one insert path,
	// CreateApproval (and fileRequest), takes both from the agent the token
	// named, read from its row; so the reference cannot dangle, and the
	// checks only locked the two rows. SQLite keeps them: it cannot drop a
	// constraint without copying the table, and it takes no row locks.
	{24, "approvals: the indexes its queries use, partial where only some asks are read; no foreign-key locks on the account and agent of every ask", `
DROP INDEX approvals_status;
DROP INDEX approvals_kind;
DROP INDEX approvals_repo;
DROP INDEX approvals_head;
DROP INDEX approvals_job;
DROP INDEX approvals_asked_of;
DROP INDEX approvals_expiry;
CREATE INDEX approvals_repo ON approvals (account_id, repo_key, pr_number, seq) WHERE repo_key <> '';
CREATE INDEX approvals_head ON approvals (account_id, head, seq) WHERE head <> '';
CREATE INDEX approvals_job ON approvals (account_id, job_id, seq) WHERE job_id <> '';
CREATE INDEX approvals_active ON approvals (account_id, seq) WHERE status IN ('approved', 'in_progress');
CREATE INDEX approvals_expiry ON approvals (expires_at) WHERE status IN ('pending', 'question');
{{postgres}}ALTER TABLE approvals DROP CONSTRAINT IF EXISTS approvals_account_id_fkey;
{{postgres}}ALTER TABLE approvals DROP CONSTRAINT IF EXISTS approvals_requester_id_fkey
`},
	// Events: the primary key (seq) serves the account's whole log newest
	// first and the audit chain's ranges (seq > ? AND seq <= ?), so
	// events_account goes; events_account_step leaves out the created events,
	// a third of all, which a list by step reads through the primary key as
	// well (every ask has one, so they are dense). events.account_id loses
	// its foreign key on PostgreSQL for the reason above: accounts are never
	// deleted, and every event is written with its ask's account.
	{25, "events: no account index beside the primary key, the step index without created events, no foreign-key lock on the account", `
DROP INDEX events_account;
DROP INDEX events_account_step;
CREATE INDEX events_account_step ON events (account_id, step, seq) WHERE step <> 'created';
{{postgres}}ALTER TABLE events DROP CONSTRAINT IF EXISTS events_account_id_fkey
`},
	{26, "the running instances and their internal addresses, so that one forwards an MCP call to the instance that holds its session", `
CREATE TABLE instances (
	id TEXT PRIMARY KEY,
	address TEXT NOT NULL,
	seen_at {{time}} NOT NULL
)
`},
	{27, "away with a delegate: a member marks themselves away until a time, and the asks of the rules that count them go to their delegate meanwhile", `
CREATE TABLE aways (
	account_id TEXT NOT NULL REFERENCES accounts(id),
	person_id TEXT NOT NULL REFERENCES persons(id),
	delegate_id TEXT NOT NULL REFERENCES persons(id),
	until {{time}} NOT NULL,
	created_at {{time}} NOT NULL,
	PRIMARY KEY (account_id, person_id)
)
`},
	// The service's own agent is marked, not named: a person's OAuth client
	// named countersign-rules became the requester of every browser rule
	// change. The rules agents made before are the ones no person's client
	// is (for_person_id is set on every OAuth agent); no token matches them
	// from now on (theirs was never shown to anyone). An invite of an owner
	// or admin made under a two-person rule is held until its ask is approved.
	{28, "the service's own agent by a mark (agents.service), and invites held by the ask that governs them", `
ALTER TABLE agents ADD COLUMN service BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE agents SET service = TRUE, token_hash = 'service:' || id WHERE name = 'countersign-rules' AND for_person_id IS NULL;
CREATE UNIQUE INDEX agents_service ON agents (account_id) WHERE service;
ALTER TABLE invites ADD COLUMN approval_id TEXT NOT NULL DEFAULT '';
ALTER TABLE invites ADD COLUMN held BOOLEAN NOT NULL DEFAULT FALSE
`},
	// Where the requester says it shows an ask's check code ("this chat",
	// "the terminal on build-eu"): a hint for the page, kept beside the
	// payload like the context, never in its hash.
	{29, "approvals: where the requester shows the check code", `
ALTER TABLE approvals ADD COLUMN check_code_shown_in TEXT NOT NULL DEFAULT ''
`},
	// A window is a policy a person makes from an ask ("Approve, and the
	// same for 30 minutes"): its target is the RFC 8785 JSON of what the ask
	// is about, '' on the account's auto-approve policy. Several are on at
	// once; filing an ask reads the ones not yet revoked or expired.
	{30, "policies: windows, with their target, and an index of the policies still on", `
ALTER TABLE policies ADD COLUMN target TEXT NOT NULL DEFAULT '';
CREATE INDEX policies_on ON policies (account_id, expires_at) WHERE revoked_at IS NULL
`},
	// The members of a payload the person may change before they sign
	// (the canonical JSON of the ask's editable list, '' for none), and the
	// payload as they edited and approved it, with its hash.
	{31, "approvals: editable members, and the payload as the person edited it", `
ALTER TABLE approvals ADD COLUMN editable TEXT NOT NULL DEFAULT '';
ALTER TABLE approvals ADD COLUMN edited_payload TEXT NOT NULL DEFAULT '';
ALTER TABLE approvals ADD COLUMN edited_payload_sha256 TEXT NOT NULL DEFAULT ''
`},
}

// migrationSteps are the steps in Go that a migration runs after its SQL, in
// its transaction, by version.
var migrationSteps = map[int]func(tx *gorm.DB) error{
	18: FillSubjectKeys,
}
