package core

// laterMigrations are the migrations from version 21 on; append new ones here.
var laterMigrations = []migration{
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
	// Channels besides Web Push: what a person chose to be told by (email,
	// a Slack direct message) with their address there, the account's
	// shared channels (a Slack or Teams channel, an ntfy topic, a webhook)
	// with their settings and secret, and one durable outbox for every
	// channel, each message once per ask, person or channel, and event.
	{32, "channels: people's choices, the account's shared channels, and the channel outbox", `
CREATE TABLE person_channels (
	account_id TEXT NOT NULL REFERENCES accounts(id),
	person_id TEXT NOT NULL REFERENCES persons(id),
	kind TEXT NOT NULL,
	address TEXT NOT NULL DEFAULT '',
	created_at {{time}} NOT NULL,
	PRIMARY KEY (account_id, person_id, kind)
);
CREATE TABLE shared_channels (
	account_id TEXT NOT NULL REFERENCES accounts(id),
	name TEXT NOT NULL,
	kind TEXT NOT NULL,
	settings {{json}} NOT NULL,
	secret TEXT NOT NULL DEFAULT '',
	every_ask BOOLEAN NOT NULL DEFAULT FALSE,
	created_at {{time}} NOT NULL,
	updated_at {{time}} NOT NULL,
	PRIMARY KEY (account_id, name)
);
CREATE TABLE channel_messages (
	seq {{serial}},
	key TEXT NOT NULL UNIQUE,
	account_id TEXT NOT NULL,
	approval_id TEXT NOT NULL DEFAULT '',
	person_id TEXT NOT NULL DEFAULT '',
	channel TEXT NOT NULL,
	kind TEXT NOT NULL,
	address TEXT NOT NULL DEFAULT '',
	event TEXT NOT NULL,
	body {{json}} NOT NULL,
	created_at {{time}} NOT NULL,
	not_before {{time}} NOT NULL,
	expires_at {{time}} NOT NULL,
	attempts INTEGER NOT NULL DEFAULT 0,
	leased_until {{time}},
	done_at {{time}},
	outcome TEXT NOT NULL DEFAULT '',
	last_error TEXT NOT NULL DEFAULT '',
	remote_ref TEXT NOT NULL DEFAULT ''
);
CREATE INDEX channel_messages_due ON channel_messages (done_at, not_before);
CREATE INDEX channel_messages_approval ON channel_messages (approval_id, event);
CREATE INDEX channel_messages_person ON channel_messages (person_id, event, created_at)
`},
	{33, "oidc: provider signing keys, CIBA clients, the people each may ask, spent client assertions", `
CREATE TABLE oidc_keys (
	kid TEXT PRIMARY KEY,
	private_jwk TEXT NOT NULL,
	created_at {{time}} NOT NULL,
	retired_at {{time}},
	published_until {{time}}
);
CREATE UNIQUE INDEX oidc_keys_one_current ON oidc_keys ((retired_at IS NULL)) WHERE retired_at IS NULL;
CREATE TABLE oidc_clients (
	id TEXT PRIMARY KEY,
	account_id TEXT NOT NULL REFERENCES accounts(id),
	name TEXT NOT NULL,
	auth_method TEXT NOT NULL,
	secret_sha256 TEXT NOT NULL DEFAULT '',
	jwks TEXT NOT NULL DEFAULT '',
	delivery_mode TEXT NOT NULL,
	notification_endpoint TEXT NOT NULL DEFAULT '',
	agent_id TEXT NOT NULL REFERENCES agents(id),
	created_by TEXT NOT NULL,
	created_at {{time}} NOT NULL,
	revoked_at {{time}}
);
CREATE INDEX oidc_clients_account ON oidc_clients (account_id, created_at);
CREATE TABLE oidc_client_people (
	client_id TEXT NOT NULL REFERENCES oidc_clients(id),
	person_id TEXT NOT NULL REFERENCES persons(id),
	PRIMARY KEY (client_id, person_id)
);
CREATE TABLE oidc_assertions (
	client_id TEXT NOT NULL,
	jti TEXT NOT NULL,
	expires_at {{time}} NOT NULL,
	PRIMARY KEY (client_id, jti)
);
CREATE INDEX oidc_assertions_expiry ON oidc_assertions (expires_at)
`},
	// CIBA (OpenID Client-Initiated Backchannel Authentication): each
	// request a client made, kept by the SHA-256 of its auth_req_id, with
	// the ask it filed, its polls and, in ping mode, the notification owed
	// to the client (its token and the plain auth_req_id the notification
	// names, kept for ping alone); and the access tokens the requests ended
	// in, kept hashed, for introspection.
	{34, "CIBA requests and the access tokens they end in", `
CREATE TABLE ciba_requests (
	id TEXT PRIMARY KEY,
	account_id TEXT NOT NULL REFERENCES accounts(id),
	client_id TEXT NOT NULL REFERENCES oidc_clients(id),
	approval_id TEXT NOT NULL UNIQUE,
	person_id TEXT NOT NULL REFERENCES persons(id),
	subject TEXT NOT NULL,
	scope TEXT NOT NULL,
	authorization_details TEXT NOT NULL DEFAULT '',
	delivery_mode TEXT NOT NULL,
	notification_token TEXT NOT NULL DEFAULT '',
	auth_req_id TEXT NOT NULL DEFAULT '',
	poll_interval INTEGER NOT NULL,
	created_at {{time}} NOT NULL,
	expires_at {{time}} NOT NULL,
	polled_at {{time}},
	redeemed_at {{time}},
	notify_due_at {{time}},
	notify_leased_until {{time}},
	notify_attempts INTEGER NOT NULL DEFAULT 0,
	notified_at {{time}},
	notify_error TEXT NOT NULL DEFAULT ''
);
CREATE INDEX ciba_requests_person ON ciba_requests (person_id, created_at);
CREATE INDEX ciba_requests_client ON ciba_requests (client_id, created_at);
CREATE INDEX ciba_requests_notify ON ciba_requests (notify_due_at);
CREATE TABLE oidc_access_tokens (
	token_sha256 TEXT PRIMARY KEY,
	account_id TEXT NOT NULL REFERENCES accounts(id),
	client_id TEXT NOT NULL,
	request_id TEXT NOT NULL,
	approval_id TEXT NOT NULL,
	person_id TEXT NOT NULL,
	subject TEXT NOT NULL,
	scope TEXT NOT NULL,
	authorization_details TEXT NOT NULL DEFAULT '',
	created_at {{time}} NOT NULL,
	expires_at {{time}} NOT NULL,
	revoked_at {{time}}
)
`},
}
