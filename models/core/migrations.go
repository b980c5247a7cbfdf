package core

import (
	"gorm.io/gorm"
)

// Migrations are appended, never edited: a database that ran version N keeps
// the schema version N made. They are one ordered list, written in two
// files for their length: versions 1 to 20 here, 21 on in migrations_later.go.
var Migrations = append(firstMigrations, laterMigrations...)

var firstMigrations = []migration{
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
}

// migrationSteps are the steps in Go that a migration runs after its SQL, in
// its transaction, by version.
var migrationSteps = map[int]func(tx *gorm.DB) error{
	18: FillSubjectKeys,
}
