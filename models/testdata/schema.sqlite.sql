-- index agent_requests_key on agent_requests
CREATE UNIQUE INDEX agent_requests_key ON agent_requests (agent_id, idempotency_key);
-- index agent_requests_session on agent_requests
CREATE INDEX agent_requests_session ON agent_requests (session_id, delivered_at);
-- index agent_sessions_idle on agent_sessions
CREATE INDEX agent_sessions_idle ON agent_sessions (heartbeat_at) WHERE ended_at IS NULL;
-- index agent_sessions_open on agent_sessions
CREATE INDEX agent_sessions_open ON agent_sessions (account_id, ended_at, heartbeat_at);
-- index agents_service on agents
CREATE UNIQUE INDEX agents_service ON agents (account_id) WHERE service;
-- index approval_signatures_approval on approval_signatures
CREATE INDEX approval_signatures_approval ON approval_signatures (approval_id, seq);
-- index approvals_account on approvals
CREATE INDEX approvals_account ON approvals (account_id, seq);
-- index approvals_active on approvals
CREATE INDEX approvals_active ON approvals (account_id, seq) WHERE status IN ('approved', 'in_progress');
-- index approvals_expiry on approvals
CREATE INDEX approvals_expiry ON approvals (expires_at) WHERE status IN ('pending', 'question');
-- index approvals_head on approvals
CREATE INDEX approvals_head ON approvals (account_id, head, seq) WHERE head <> '';
-- index approvals_job on approvals
CREATE INDEX approvals_job ON approvals (account_id, job_id, seq) WHERE job_id <> '';
-- index approvals_open on approvals
CREATE INDEX approvals_open ON approvals (account_id, seq) WHERE status IN ('pending', 'question');
-- index approvals_payload on approvals
CREATE INDEX approvals_payload ON approvals (account_id, payload_sha256, seq);
-- index approvals_repo on approvals
CREATE INDEX approvals_repo ON approvals (account_id, repo_key, pr_number, seq) WHERE repo_key <> '';
-- index approvals_repo_seq on approvals
CREATE INDEX approvals_repo_seq ON approvals (account_id, repo_key, seq, status);
-- index approvals_runner on approvals
CREATE INDEX approvals_runner ON approvals (runner_id, seq) WHERE runner_id <> '';
-- index audit_chain_position on audit_chain
CREATE UNIQUE INDEX audit_chain_position ON audit_chain (account_id, pos);
-- index ceremonies_expiry on ceremonies
CREATE INDEX ceremonies_expiry ON ceremonies (expires_at);
-- index channel_messages_approval on channel_messages
CREATE INDEX channel_messages_approval ON channel_messages (approval_id, event);
-- index channel_messages_due on channel_messages
CREATE INDEX channel_messages_due ON channel_messages (done_at, not_before);
-- index channel_messages_person on channel_messages
CREATE INDEX channel_messages_person ON channel_messages (person_id, event, created_at);
-- index ciba_requests_client on ciba_requests
CREATE INDEX ciba_requests_client ON ciba_requests (client_id, created_at);
-- index ciba_requests_notify on ciba_requests
CREATE INDEX ciba_requests_notify ON ciba_requests (notify_due_at);
-- index ciba_requests_person on ciba_requests
CREATE INDEX ciba_requests_person ON ciba_requests (person_id, created_at);
-- index decision_challenges_approval on decision_challenges
CREATE INDEX decision_challenges_approval ON decision_challenges (approval_id);
-- index decision_challenges_expiry on decision_challenges
CREATE INDEX decision_challenges_expiry ON decision_challenges (expires_at);
-- index device_grants_expiry on device_grants
CREATE INDEX device_grants_expiry ON device_grants (expires_at);
-- index device_keys_person on device_keys
CREATE INDEX device_keys_person ON device_keys (person_id);
-- index events_account_step on events
CREATE INDEX events_account_step ON events (account_id, step, seq) WHERE step <> 'created';
-- index events_approval_account on events
CREATE INDEX events_approval_account ON events (approval_id, account_id, seq);
-- index invites_account on invites
CREATE INDEX invites_account ON invites (account_id, created_at);
-- index memberships_person on memberships
CREATE INDEX memberships_person ON memberships (person_id);
-- index oauth_codes_expiry on oauth_codes
CREATE INDEX oauth_codes_expiry ON oauth_codes (expires_at);
-- index oauth_connections_person on oauth_connections
CREATE INDEX oauth_connections_person ON oauth_connections (person_id, account_id);
-- index oauth_tokens_agent on oauth_tokens
CREATE INDEX oauth_tokens_agent ON oauth_tokens (agent_id);
-- index oauth_tokens_expiry on oauth_tokens
CREATE INDEX oauth_tokens_expiry ON oauth_tokens (expires_at);
-- index oauth_tokens_family on oauth_tokens
CREATE INDEX oauth_tokens_family ON oauth_tokens (family_id);
-- index oidc_assertions_expiry on oidc_assertions
CREATE INDEX oidc_assertions_expiry ON oidc_assertions (expires_at);
-- index oidc_clients_account on oidc_clients
CREATE INDEX oidc_clients_account ON oidc_clients (account_id, created_at);
-- index oidc_keys_one_current on oidc_keys
CREATE UNIQUE INDEX oidc_keys_one_current ON oidc_keys ((retired_at IS NULL)) WHERE retired_at IS NULL;
-- index persons_subject_folded on persons
CREATE UNIQUE INDEX persons_subject_folded ON persons (subject_key);
-- index policies_account on policies
CREATE INDEX policies_account ON policies (account_id, created_at);
-- index policies_on on policies
CREATE INDEX policies_on ON policies (account_id, expires_at) WHERE revoked_at IS NULL;
-- index push_jobs_approval on push_jobs
CREATE INDEX push_jobs_approval ON push_jobs (approval_id, event);
-- index push_jobs_due on push_jobs
CREATE INDEX push_jobs_due ON push_jobs (done_at, not_before);
-- index push_jobs_person on push_jobs
CREATE INDEX push_jobs_person ON push_jobs (person_id, event, created_at);
-- index push_jobs_subscription on push_jobs
CREATE INDEX push_jobs_subscription ON push_jobs (subscription_id, event);
-- index push_links_expiry on push_links
CREATE INDEX push_links_expiry ON push_links (expires_at);
-- index push_links_person on push_links
CREATE INDEX push_links_person ON push_links (person_id);
-- index push_links_subscription on push_links
CREATE INDEX push_links_subscription ON push_links (subscription_id, approval_id);
-- index push_subscriptions_person on push_subscriptions
CREATE INDEX push_subscriptions_person ON push_subscriptions (person_id);
-- index runner_report_signatures_expiry on runner_report_signatures
CREATE INDEX runner_report_signatures_expiry ON runner_report_signatures (expires_at);
-- index sqlite_autoindex_accounts_1 on accounts
;
-- index sqlite_autoindex_accounts_2 on accounts
;
-- index sqlite_autoindex_acme_cache_1 on acme_cache
;
-- index sqlite_autoindex_agent_requests_1 on agent_requests
;
-- index sqlite_autoindex_agent_sessions_1 on agent_sessions
;
-- index sqlite_autoindex_agents_1 on agents
;
-- index sqlite_autoindex_agents_2 on agents
;
-- index sqlite_autoindex_agents_3 on agents
;
-- index sqlite_autoindex_approval_rules_1 on approval_rules
;
-- index sqlite_autoindex_approval_signatures_1 on approval_signatures
;
-- index sqlite_autoindex_approvals_1 on approvals
;
-- index sqlite_autoindex_audit_chain_1 on audit_chain
;
-- index sqlite_autoindex_aways_1 on aways
;
-- index sqlite_autoindex_ceremonies_1 on ceremonies
;
-- index sqlite_autoindex_channel_messages_1 on channel_messages
;
-- index sqlite_autoindex_ciba_requests_1 on ciba_requests
;
-- index sqlite_autoindex_ciba_requests_2 on ciba_requests
;
-- index sqlite_autoindex_decision_challenges_1 on decision_challenges
;
-- index sqlite_autoindex_device_grants_1 on device_grants
;
-- index sqlite_autoindex_device_keys_1 on device_keys
;
-- index sqlite_autoindex_instances_1 on instances
;
-- index sqlite_autoindex_invites_1 on invites
;
-- index sqlite_autoindex_memberships_1 on memberships
;
-- index sqlite_autoindex_oauth_clients_1 on oauth_clients
;
-- index sqlite_autoindex_oauth_codes_1 on oauth_codes
;
-- index sqlite_autoindex_oauth_codes_2 on oauth_codes
;
-- index sqlite_autoindex_oauth_connections_1 on oauth_connections
;
-- index sqlite_autoindex_oauth_tokens_1 on oauth_tokens
;
-- index sqlite_autoindex_oauth_tokens_2 on oauth_tokens
;
-- index sqlite_autoindex_oidc_access_tokens_1 on oidc_access_tokens
;
-- index sqlite_autoindex_oidc_assertions_1 on oidc_assertions
;
-- index sqlite_autoindex_oidc_client_people_1 on oidc_client_people
;
-- index sqlite_autoindex_oidc_clients_1 on oidc_clients
;
-- index sqlite_autoindex_oidc_keys_1 on oidc_keys
;
-- index sqlite_autoindex_person_channels_1 on person_channels
;
-- index sqlite_autoindex_persons_1 on persons
;
-- index sqlite_autoindex_persons_2 on persons
;
-- index sqlite_autoindex_policies_1 on policies
;
-- index sqlite_autoindex_policies_2 on policies
;
-- index sqlite_autoindex_push_links_1 on push_links
;
-- index sqlite_autoindex_push_links_2 on push_links
;
-- index sqlite_autoindex_push_subscriptions_1 on push_subscriptions
;
-- index sqlite_autoindex_push_subscriptions_2 on push_subscriptions
;
-- index sqlite_autoindex_runner_report_signatures_1 on runner_report_signatures
;
-- index sqlite_autoindex_runners_1 on runners
;
-- index sqlite_autoindex_runners_2 on runners
;
-- index sqlite_autoindex_runners_3 on runners
;
-- index sqlite_autoindex_settings_1 on settings
;
-- index sqlite_autoindex_shared_channels_1 on shared_channels
;
-- index sqlite_autoindex_web_sessions_1 on web_sessions
;
-- index sqlite_autoindex_work_columns_1 on work_columns
;
-- index sqlite_autoindex_work_columns_2 on work_columns
;
-- index sqlite_autoindex_work_items_1 on work_items
;
-- index web_sessions_expiry on web_sessions
CREATE INDEX web_sessions_expiry ON web_sessions (expires_at);
-- index web_sessions_person on web_sessions
CREATE INDEX web_sessions_person ON web_sessions (person_id);
-- index work_item_history_item on work_item_history
CREATE INDEX work_item_history_item ON work_item_history (account_id, item_id, seq);
-- index work_items_column on work_items
CREATE INDEX work_items_column ON work_items (account_id, column_key, created_at);
-- table accounts on accounts
CREATE TABLE accounts (
	id TEXT PRIMARY KEY,
	name TEXT NOT NULL UNIQUE,
	allow_private_evidence BOOLEAN NOT NULL DEFAULT FALSE,
	created_at TIMESTAMP NOT NULL
);
-- table acme_cache on acme_cache
CREATE TABLE acme_cache (
	name TEXT PRIMARY KEY,
	data BLOB NOT NULL,
	updated_at TIMESTAMP NOT NULL
);
-- table agent_requests on agent_requests
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
	delivered_at TIMESTAMP,
	created_at TIMESTAMP NOT NULL
);
-- table agent_sessions on agent_sessions
CREATE TABLE agent_sessions (
	id TEXT PRIMARY KEY,
	account_id TEXT NOT NULL REFERENCES accounts(id),
	agent_id TEXT NOT NULL REFERENCES agents(id),
	agent_subject TEXT NOT NULL,
	label TEXT NOT NULL DEFAULT '',
	started_at TIMESTAMP NOT NULL,
	heartbeat_at TIMESTAMP NOT NULL,
	ended_at TIMESTAMP,
	end_reason TEXT NOT NULL DEFAULT ''
);
-- table agents on agents
CREATE TABLE agents (
	id TEXT PRIMARY KEY,
	account_id TEXT NOT NULL REFERENCES accounts(id),
	name TEXT NOT NULL,
	subject TEXT NOT NULL,
	token_hash TEXT NOT NULL UNIQUE,
	scopes TEXT NOT NULL,
	disabled BOOLEAN NOT NULL DEFAULT FALSE,
	disabled_reason TEXT NOT NULL DEFAULT '',
	created_at TIMESTAMP NOT NULL, deleted_at TIMESTAMP, for_person_id TEXT REFERENCES persons(id), service BOOLEAN NOT NULL DEFAULT FALSE,
	UNIQUE (account_id, name)
);
-- table approval_rules on approval_rules
CREATE TABLE approval_rules (
	account_id TEXT NOT NULL REFERENCES accounts(id),
	id TEXT NOT NULL,
	spec TEXT NOT NULL,
	builtin BOOLEAN NOT NULL DEFAULT FALSE,
	removed BOOLEAN NOT NULL DEFAULT FALSE,
	created_by TEXT NOT NULL DEFAULT '',
	created_at TIMESTAMP NOT NULL,
	updated_at TIMESTAMP NOT NULL,
	PRIMARY KEY (account_id, id)
);
-- table approval_signatures on approval_signatures
CREATE TABLE approval_signatures (
	seq INTEGER PRIMARY KEY AUTOINCREMENT,
	account_id TEXT NOT NULL REFERENCES accounts(id),
	approval_id TEXT NOT NULL,
	person_id TEXT NOT NULL REFERENCES persons(id),
	subject TEXT NOT NULL,
	credential_id TEXT NOT NULL,
	decision TEXT NOT NULL,
	proof TEXT NOT NULL,
	created_at TIMESTAMP NOT NULL,
	UNIQUE (approval_id, person_id)
);
-- table approvals on approvals
CREATE TABLE approvals (
	seq INTEGER PRIMARY KEY AUTOINCREMENT,
	id TEXT NOT NULL UNIQUE,
	account_id TEXT NOT NULL REFERENCES accounts(id),
	kind TEXT NOT NULL,
	title TEXT NOT NULL,
	summary TEXT NOT NULL DEFAULT '',
	approve_means TEXT NOT NULL DEFAULT '',
	deny_means TEXT NOT NULL DEFAULT '',
	payload TEXT NOT NULL,
	payload_sha256 TEXT NOT NULL,
	context TEXT,
	links TEXT,
	agent_label TEXT NOT NULL DEFAULT '',
	requester_id TEXT NOT NULL REFERENCES agents(id),
	requester_subject TEXT NOT NULL,
	asked_of TEXT NOT NULL DEFAULT '',
	status TEXT NOT NULL,
	decision TEXT NOT NULL DEFAULT '',
	decided_by TEXT NOT NULL DEFAULT '',
	decided_at TIMESTAMP,
	note TEXT NOT NULL DEFAULT '',
	proof TEXT,
	supersedes TEXT NOT NULL DEFAULT '',
	superseded_by TEXT NOT NULL DEFAULT '',
	repo_key TEXT NOT NULL DEFAULT '',
	pr_number BIGINT NOT NULL DEFAULT 0,
	head TEXT NOT NULL DEFAULT '',
	job_id TEXT NOT NULL DEFAULT '',
	priority INTEGER NOT NULL DEFAULT 0,
	version INTEGER NOT NULL DEFAULT 1,
	expires_at TIMESTAMP NOT NULL,
	created_at TIMESTAMP NOT NULL,
	updated_at TIMESTAMP NOT NULL
, runner_id TEXT NOT NULL DEFAULT '', requirement TEXT, escalated_at TIMESTAMP, reminded_at TIMESTAMP, check_code_shown_in TEXT NOT NULL DEFAULT '', editable TEXT NOT NULL DEFAULT '', edited_payload TEXT NOT NULL DEFAULT '', edited_payload_sha256 TEXT NOT NULL DEFAULT '');
-- table audit_chain on audit_chain
CREATE TABLE audit_chain (
	seq BIGINT PRIMARY KEY,
	account_id TEXT NOT NULL,
	pos BIGINT NOT NULL,
	digest TEXT NOT NULL,
	hash TEXT NOT NULL,
	sealed_at TIMESTAMP NOT NULL
);
-- table aways on aways
CREATE TABLE aways (
	account_id TEXT NOT NULL REFERENCES accounts(id),
	person_id TEXT NOT NULL REFERENCES persons(id),
	delegate_id TEXT NOT NULL REFERENCES persons(id),
	until TIMESTAMP NOT NULL,
	created_at TIMESTAMP NOT NULL,
	PRIMARY KEY (account_id, person_id)
);
-- table ceremonies on ceremonies
CREATE TABLE ceremonies (
	id_hash TEXT PRIMARY KEY,
	kind TEXT NOT NULL,
	subject TEXT NOT NULL DEFAULT '',
	data TEXT NOT NULL,
	expires_at TIMESTAMP NOT NULL
);
-- table channel_messages on channel_messages
CREATE TABLE channel_messages (
	seq INTEGER PRIMARY KEY AUTOINCREMENT,
	key TEXT NOT NULL UNIQUE,
	account_id TEXT NOT NULL,
	approval_id TEXT NOT NULL DEFAULT '',
	person_id TEXT NOT NULL DEFAULT '',
	channel TEXT NOT NULL,
	kind TEXT NOT NULL,
	address TEXT NOT NULL DEFAULT '',
	event TEXT NOT NULL,
	body TEXT NOT NULL,
	created_at TIMESTAMP NOT NULL,
	not_before TIMESTAMP NOT NULL,
	expires_at TIMESTAMP NOT NULL,
	attempts INTEGER NOT NULL DEFAULT 0,
	leased_until TIMESTAMP,
	done_at TIMESTAMP,
	outcome TEXT NOT NULL DEFAULT '',
	last_error TEXT NOT NULL DEFAULT '',
	remote_ref TEXT NOT NULL DEFAULT ''
);
-- table ciba_requests on ciba_requests
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
	created_at TIMESTAMP NOT NULL,
	expires_at TIMESTAMP NOT NULL,
	polled_at TIMESTAMP,
	redeemed_at TIMESTAMP,
	notify_due_at TIMESTAMP,
	notify_leased_until TIMESTAMP,
	notify_attempts INTEGER NOT NULL DEFAULT 0,
	notified_at TIMESTAMP,
	notify_error TEXT NOT NULL DEFAULT ''
);
-- table decision_challenges on decision_challenges
CREATE TABLE decision_challenges (
	nonce TEXT PRIMARY KEY,
	approval_id TEXT NOT NULL,
	person_id TEXT NOT NULL,
	decision TEXT NOT NULL,
	payload_sha256 TEXT NOT NULL,
	created_at TIMESTAMP NOT NULL,
	expires_at TIMESTAMP NOT NULL,
	used_at TIMESTAMP
);
-- table device_grants on device_grants
CREATE TABLE device_grants (
	token_hash TEXT PRIMARY KEY,
	kind TEXT NOT NULL,
	person_id TEXT NOT NULL REFERENCES persons(id),
	session_hash TEXT NOT NULL DEFAULT '',
	authorised_by TEXT NOT NULL,
	created_at TIMESTAMP NOT NULL,
	expires_at TIMESTAMP NOT NULL,
	used_at TIMESTAMP
);
-- table device_keys on device_keys
CREATE TABLE device_keys (
	id TEXT PRIMARY KEY,
	person_id TEXT NOT NULL REFERENCES persons(id),
	name TEXT NOT NULL,
	credential TEXT NOT NULL,
	public_key TEXT NOT NULL,
	sign_count BIGINT NOT NULL DEFAULT 0,
	backup_eligible BOOLEAN NOT NULL DEFAULT FALSE,
	backed_up BOOLEAN NOT NULL DEFAULT FALSE,
	created_at TIMESTAMP NOT NULL,
	last_used_at TIMESTAMP,
	removed_at TIMESTAMP
, added_by TEXT NOT NULL DEFAULT '');
-- table events on events
CREATE TABLE events (
	seq INTEGER PRIMARY KEY AUTOINCREMENT,
	account_id TEXT NOT NULL REFERENCES accounts(id),
	approval_id TEXT NOT NULL,
	at TIMESTAMP NOT NULL,
	actor_kind TEXT NOT NULL,
	actor TEXT NOT NULL,
	step TEXT NOT NULL,
	from_status TEXT NOT NULL DEFAULT '',
	to_status TEXT NOT NULL DEFAULT '',
	note TEXT NOT NULL DEFAULT '',
	data TEXT
);
-- table instances on instances
CREATE TABLE instances (
	id TEXT PRIMARY KEY,
	address TEXT NOT NULL,
	seen_at TIMESTAMP NOT NULL
);
-- table invites on invites
CREATE TABLE invites (
	token_hash TEXT PRIMARY KEY,
	account_id TEXT NOT NULL REFERENCES accounts(id),
	role TEXT NOT NULL,
	subject TEXT NOT NULL DEFAULT '',
	created_by TEXT NOT NULL,
	created_at TIMESTAMP NOT NULL,
	expires_at TIMESTAMP NOT NULL,
	used_at TIMESTAMP,
	used_by TEXT NOT NULL DEFAULT ''
, kind TEXT NOT NULL DEFAULT 'new_person', approval_id TEXT NOT NULL DEFAULT '', held BOOLEAN NOT NULL DEFAULT FALSE);
-- table memberships on memberships
CREATE TABLE memberships (
	account_id TEXT NOT NULL REFERENCES accounts(id),
	person_id TEXT NOT NULL REFERENCES persons(id),
	role TEXT NOT NULL,
	created_at TIMESTAMP NOT NULL,
	PRIMARY KEY (account_id, person_id)
);
-- table oauth_clients on oauth_clients
CREATE TABLE oauth_clients (
	id TEXT PRIMARY KEY,
	name TEXT NOT NULL,
	redirect_uris TEXT NOT NULL,
	created_at TIMESTAMP NOT NULL
);
-- table oauth_codes on oauth_codes
CREATE TABLE oauth_codes (
	id TEXT PRIMARY KEY,
	code_hash TEXT NOT NULL UNIQUE,
	agent_id TEXT NOT NULL REFERENCES agents(id),
	client_id TEXT NOT NULL,
	redirect_uri TEXT NOT NULL,
	code_challenge TEXT NOT NULL,
	resource TEXT NOT NULL,
	scopes TEXT NOT NULL,
	created_at TIMESTAMP NOT NULL,
	expires_at TIMESTAMP NOT NULL,
	used_at TIMESTAMP
);
-- table oauth_connections on oauth_connections
CREATE TABLE oauth_connections (
	agent_id TEXT PRIMARY KEY REFERENCES agents(id),
	account_id TEXT NOT NULL REFERENCES accounts(id),
	person_id TEXT NOT NULL REFERENCES persons(id),
	client_id TEXT NOT NULL,
	client_name TEXT NOT NULL,
	redirect_host TEXT NOT NULL,
	verified BOOLEAN NOT NULL,
	created_at TIMESTAMP NOT NULL
);
-- table oauth_tokens on oauth_tokens
CREATE TABLE oauth_tokens (
	id TEXT PRIMARY KEY,
	token_hash TEXT NOT NULL UNIQUE,
	kind TEXT NOT NULL,
	family_id TEXT NOT NULL,
	agent_id TEXT NOT NULL REFERENCES agents(id),
	client_id TEXT NOT NULL,
	resource TEXT NOT NULL,
	scopes TEXT NOT NULL,
	created_at TIMESTAMP NOT NULL,
	expires_at TIMESTAMP NOT NULL,
	used_at TIMESTAMP,
	revoked_at TIMESTAMP
);
-- table oidc_access_tokens on oidc_access_tokens
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
	created_at TIMESTAMP NOT NULL,
	expires_at TIMESTAMP NOT NULL,
	revoked_at TIMESTAMP
);
-- table oidc_assertions on oidc_assertions
CREATE TABLE oidc_assertions (
	client_id TEXT NOT NULL,
	jti TEXT NOT NULL,
	expires_at TIMESTAMP NOT NULL,
	PRIMARY KEY (client_id, jti)
);
-- table oidc_client_people on oidc_client_people
CREATE TABLE oidc_client_people (
	client_id TEXT NOT NULL REFERENCES oidc_clients(id),
	person_id TEXT NOT NULL REFERENCES persons(id),
	PRIMARY KEY (client_id, person_id)
);
-- table oidc_clients on oidc_clients
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
	created_at TIMESTAMP NOT NULL,
	revoked_at TIMESTAMP
);
-- table oidc_keys on oidc_keys
CREATE TABLE oidc_keys (
	kid TEXT PRIMARY KEY,
	private_jwk TEXT NOT NULL,
	created_at TIMESTAMP NOT NULL,
	retired_at TIMESTAMP,
	published_until TIMESTAMP
);
-- table person_channels on person_channels
CREATE TABLE person_channels (
	account_id TEXT NOT NULL REFERENCES accounts(id),
	person_id TEXT NOT NULL REFERENCES persons(id),
	kind TEXT NOT NULL,
	address TEXT NOT NULL DEFAULT '',
	created_at TIMESTAMP NOT NULL,
	PRIMARY KEY (account_id, person_id, kind)
);
-- table persons on persons
CREATE TABLE persons (
	id TEXT PRIMARY KEY,
	subject TEXT NOT NULL UNIQUE,
	display_name TEXT NOT NULL DEFAULT '',
	created_at TIMESTAMP NOT NULL
, subject_key TEXT);
-- table policies on policies
CREATE TABLE policies (
	id TEXT PRIMARY KEY,
	account_id TEXT NOT NULL REFERENCES accounts(id),
	approval_id TEXT NOT NULL UNIQUE,
	scope TEXT NOT NULL,
	requester TEXT NOT NULL,
	device TEXT NOT NULL DEFAULT '',
	signer_id TEXT NOT NULL REFERENCES persons(id),
	signer_subject TEXT NOT NULL,
	credential_id TEXT NOT NULL,
	signed_at TIMESTAMP NOT NULL,
	expires_at TIMESTAMP NOT NULL,
	revoked_at TIMESTAMP,
	revoked_by TEXT NOT NULL DEFAULT '',
	revoke_note TEXT NOT NULL DEFAULT '',
	replaces TEXT NOT NULL DEFAULT '',
	replaced_by TEXT NOT NULL DEFAULT '',
	approved_count INTEGER NOT NULL DEFAULT 0,
	last_approved_at TIMESTAMP,
	created_at TIMESTAMP NOT NULL
, target TEXT NOT NULL DEFAULT '');
-- table push_jobs on push_jobs
CREATE TABLE push_jobs (
	seq INTEGER PRIMARY KEY AUTOINCREMENT,
	subscription_id TEXT NOT NULL,
	person_id TEXT NOT NULL,
	approval_id TEXT NOT NULL DEFAULT '',
	event TEXT NOT NULL,
	body TEXT NOT NULL,
	urgency TEXT NOT NULL,
	topic TEXT NOT NULL DEFAULT '',
	created_at TIMESTAMP NOT NULL,
	not_before TIMESTAMP NOT NULL,
	expires_at TIMESTAMP NOT NULL,
	attempts INTEGER NOT NULL DEFAULT 0,
	leased_until TIMESTAMP,
	done_at TIMESTAMP,
	outcome TEXT NOT NULL DEFAULT '',
	last_error TEXT NOT NULL DEFAULT ''
);
-- table push_links on push_links
CREATE TABLE push_links (
	id TEXT PRIMARY KEY,
	token_hash TEXT NOT NULL UNIQUE,
	account_id TEXT NOT NULL REFERENCES accounts(id),
	approval_id TEXT NOT NULL,
	person_id TEXT NOT NULL,
	subscription_id TEXT NOT NULL,
	created_at TIMESTAMP NOT NULL,
	expires_at TIMESTAMP NOT NULL,
	opened_at TIMESTAMP,
	spent_at TIMESTAMP
);
-- table push_subscriptions on push_subscriptions
CREATE TABLE push_subscriptions (
	id TEXT PRIMARY KEY,
	person_id TEXT NOT NULL REFERENCES persons(id),
	endpoint TEXT NOT NULL UNIQUE,
	p256dh TEXT NOT NULL,
	auth TEXT NOT NULL,
	user_agent TEXT NOT NULL DEFAULT '',
	created_at TIMESTAMP NOT NULL,
	last_success_at TIMESTAMP,
	failures INTEGER NOT NULL DEFAULT 0
);
-- table runner_report_signatures on runner_report_signatures
CREATE TABLE runner_report_signatures (
	signature TEXT PRIMARY KEY,
	approval_id TEXT NOT NULL,
	expires_at TIMESTAMP NOT NULL
);
-- table runners on runners
CREATE TABLE runners (
	id TEXT PRIMARY KEY,
	account_id TEXT NOT NULL REFERENCES accounts(id),
	name TEXT NOT NULL,
	public_key TEXT NOT NULL,
	token_hash TEXT NOT NULL UNIQUE,
	disabled BOOLEAN NOT NULL DEFAULT FALSE,
	disabled_by TEXT NOT NULL DEFAULT '',
	disabled_at TIMESTAMP,
	created_by TEXT NOT NULL DEFAULT '',
	created_at TIMESTAMP NOT NULL,
	UNIQUE (account_id, name)
);
-- table schema_migrations on schema_migrations
CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMP NOT NULL);
-- table settings on settings
CREATE TABLE settings (
	name TEXT PRIMARY KEY,
	value TEXT NOT NULL
);
-- table shared_channels on shared_channels
CREATE TABLE shared_channels (
	account_id TEXT NOT NULL REFERENCES accounts(id),
	name TEXT NOT NULL,
	kind TEXT NOT NULL,
	settings TEXT NOT NULL,
	secret TEXT NOT NULL DEFAULT '',
	every_ask BOOLEAN NOT NULL DEFAULT FALSE,
	created_at TIMESTAMP NOT NULL,
	updated_at TIMESTAMP NOT NULL,
	PRIMARY KEY (account_id, name)
);
-- table sqlite_sequence on sqlite_sequence
CREATE TABLE sqlite_sequence(name,seq);
-- table web_sessions on web_sessions
CREATE TABLE web_sessions (
	id_hash TEXT PRIMARY KEY,
	person_id TEXT NOT NULL REFERENCES persons(id),
	account_id TEXT NOT NULL REFERENCES accounts(id),
	created_at TIMESTAMP NOT NULL,
	last_seen_at TIMESTAMP NOT NULL,
	expires_at TIMESTAMP NOT NULL
);
-- table work_columns on work_columns
CREATE TABLE work_columns (
	id TEXT PRIMARY KEY,
	account_id TEXT NOT NULL REFERENCES accounts(id),
	key TEXT NOT NULL,
	name TEXT NOT NULL,
	position INTEGER NOT NULL,
	created_at TIMESTAMP NOT NULL,
	UNIQUE (account_id, key)
);
-- table work_item_history on work_item_history
CREATE TABLE work_item_history (
	seq INTEGER PRIMARY KEY AUTOINCREMENT,
	account_id TEXT NOT NULL REFERENCES accounts(id),
	item_id TEXT NOT NULL,
	at TIMESTAMP NOT NULL,
	actor_kind TEXT NOT NULL,
	actor TEXT NOT NULL,
	action TEXT NOT NULL,
	from_column TEXT NOT NULL DEFAULT '',
	to_column TEXT NOT NULL DEFAULT '',
	approval_id TEXT NOT NULL DEFAULT '',
	note TEXT NOT NULL DEFAULT ''
);
-- table work_items on work_items
CREATE TABLE work_items (
	id TEXT PRIMARY KEY,
	account_id TEXT NOT NULL REFERENCES accounts(id),
	column_key TEXT NOT NULL,
	title TEXT NOT NULL,
	description TEXT NOT NULL DEFAULT '',
	created_at TIMESTAMP NOT NULL,
	updated_at TIMESTAMP NOT NULL
);
