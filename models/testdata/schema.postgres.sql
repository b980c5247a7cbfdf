CREATE TABLE public.accounts (
    id text NOT NULL,
    name text NOT NULL,
    allow_private_evidence boolean DEFAULT false NOT NULL,
    created_at timestamp with time zone NOT NULL
);

CREATE TABLE public.acme_cache (
    name text NOT NULL,
    data bytea NOT NULL,
    updated_at timestamp with time zone NOT NULL
);

CREATE TABLE public.agent_requests (
    approval_id text NOT NULL,
    account_id text NOT NULL,
    agent_id text NOT NULL,
    idempotency_key text NOT NULL,
    arguments_sha256 text NOT NULL,
    session_id text DEFAULT ''::text NOT NULL,
    method text DEFAULT ''::text NOT NULL,
    item_id text DEFAULT ''::text NOT NULL,
    column_key text DEFAULT ''::text NOT NULL,
    executed boolean DEFAULT false NOT NULL,
    result text DEFAULT ''::text NOT NULL,
    delivered_at timestamp with time zone,
    created_at timestamp with time zone NOT NULL
);

CREATE TABLE public.agent_sessions (
    id text NOT NULL,
    account_id text NOT NULL,
    agent_id text NOT NULL,
    agent_subject text NOT NULL,
    label text DEFAULT ''::text NOT NULL,
    started_at timestamp with time zone NOT NULL,
    heartbeat_at timestamp with time zone NOT NULL,
    ended_at timestamp with time zone,
    end_reason text DEFAULT ''::text NOT NULL
);

CREATE TABLE public.agents (
    id text NOT NULL,
    account_id text NOT NULL,
    name text NOT NULL,
    subject text NOT NULL,
    token_hash text NOT NULL,
    scopes text NOT NULL,
    disabled boolean DEFAULT false NOT NULL,
    disabled_reason text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    deleted_at timestamp with time zone,
    for_person_id text,
    service boolean DEFAULT false NOT NULL
);

CREATE TABLE public.approval_rules (
    account_id text NOT NULL,
    id text NOT NULL,
    spec text NOT NULL,
    builtin boolean DEFAULT false NOT NULL,
    removed boolean DEFAULT false NOT NULL,
    created_by text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL
);

CREATE TABLE public.approval_signatures (
    seq bigint NOT NULL,
    account_id text NOT NULL,
    approval_id text NOT NULL,
    person_id text NOT NULL,
    subject text NOT NULL,
    credential_id text NOT NULL,
    decision text NOT NULL,
    proof text NOT NULL,
    created_at timestamp with time zone NOT NULL
);

CREATE SEQUENCE public.approval_signatures_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.approval_signatures_seq_seq OWNED BY public.approval_signatures.seq;

CREATE TABLE public.approvals (
    seq bigint NOT NULL,
    id text NOT NULL,
    account_id text NOT NULL,
    kind text NOT NULL,
    title text NOT NULL,
    summary text DEFAULT ''::text NOT NULL,
    approve_means text DEFAULT ''::text NOT NULL,
    deny_means text DEFAULT ''::text NOT NULL,
    payload text NOT NULL,
    payload_sha256 text NOT NULL,
    context text,
    links text,
    agent_label text DEFAULT ''::text NOT NULL,
    requester_id text NOT NULL,
    requester_subject text NOT NULL,
    asked_of text DEFAULT ''::text NOT NULL,
    status text NOT NULL,
    decision text DEFAULT ''::text NOT NULL,
    decided_by text DEFAULT ''::text NOT NULL,
    decided_at timestamp with time zone,
    note text DEFAULT ''::text NOT NULL,
    proof text,
    supersedes text DEFAULT ''::text NOT NULL,
    superseded_by text DEFAULT ''::text NOT NULL,
    repo_key text DEFAULT ''::text NOT NULL,
    pr_number bigint DEFAULT 0 NOT NULL,
    head text DEFAULT ''::text NOT NULL,
    job_id text DEFAULT ''::text NOT NULL,
    priority integer DEFAULT 0 NOT NULL,
    version integer DEFAULT 1 NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    runner_id text DEFAULT ''::text NOT NULL,
    requirement text,
    escalated_at timestamp with time zone,
    reminded_at timestamp with time zone,
    check_code_shown_in text DEFAULT ''::text NOT NULL,
    editable text DEFAULT ''::text NOT NULL,
    edited_payload text DEFAULT ''::text NOT NULL,
    edited_payload_sha256 text DEFAULT ''::text NOT NULL
);

CREATE SEQUENCE public.approvals_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.approvals_seq_seq OWNED BY public.approvals.seq;

CREATE TABLE public.audit_chain (
    seq bigint NOT NULL,
    account_id text NOT NULL,
    pos bigint NOT NULL,
    digest text NOT NULL,
    hash text NOT NULL,
    sealed_at timestamp with time zone NOT NULL
);

CREATE TABLE public.aways (
    account_id text NOT NULL,
    person_id text NOT NULL,
    delegate_id text NOT NULL,
    until timestamp with time zone NOT NULL,
    created_at timestamp with time zone NOT NULL
);

CREATE TABLE public.ceremonies (
    id_hash text NOT NULL,
    kind text NOT NULL,
    subject text DEFAULT ''::text NOT NULL,
    data text NOT NULL,
    expires_at timestamp with time zone NOT NULL
);

CREATE TABLE public.channel_messages (
    seq bigint NOT NULL,
    key text NOT NULL,
    account_id text NOT NULL,
    approval_id text DEFAULT ''::text NOT NULL,
    person_id text DEFAULT ''::text NOT NULL,
    channel text NOT NULL,
    kind text NOT NULL,
    address text DEFAULT ''::text NOT NULL,
    event text NOT NULL,
    body text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    not_before timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    leased_until timestamp with time zone,
    done_at timestamp with time zone,
    outcome text DEFAULT ''::text NOT NULL,
    last_error text DEFAULT ''::text NOT NULL,
    remote_ref text DEFAULT ''::text NOT NULL
);

CREATE SEQUENCE public.channel_messages_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.channel_messages_seq_seq OWNED BY public.channel_messages.seq;

CREATE TABLE public.ciba_requests (
    id text NOT NULL,
    account_id text NOT NULL,
    client_id text NOT NULL,
    approval_id text NOT NULL,
    person_id text NOT NULL,
    subject text NOT NULL,
    scope text NOT NULL,
    authorization_details text DEFAULT ''::text NOT NULL,
    delivery_mode text NOT NULL,
    notification_token text DEFAULT ''::text NOT NULL,
    auth_req_id text DEFAULT ''::text NOT NULL,
    poll_interval integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    polled_at timestamp with time zone,
    redeemed_at timestamp with time zone,
    notify_due_at timestamp with time zone,
    notify_leased_until timestamp with time zone,
    notify_attempts integer DEFAULT 0 NOT NULL,
    notified_at timestamp with time zone,
    notify_error text DEFAULT ''::text NOT NULL
);

CREATE TABLE public.decision_challenges (
    nonce text NOT NULL,
    approval_id text NOT NULL,
    person_id text NOT NULL,
    decision text NOT NULL,
    payload_sha256 text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    used_at timestamp with time zone
);

CREATE TABLE public.device_grants (
    token_hash text NOT NULL,
    kind text NOT NULL,
    person_id text NOT NULL,
    session_hash text DEFAULT ''::text NOT NULL,
    authorised_by text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    used_at timestamp with time zone
);

CREATE TABLE public.device_keys (
    id text NOT NULL,
    person_id text NOT NULL,
    name text NOT NULL,
    credential text NOT NULL,
    public_key text NOT NULL,
    sign_count bigint DEFAULT 0 NOT NULL,
    backup_eligible boolean DEFAULT false NOT NULL,
    backed_up boolean DEFAULT false NOT NULL,
    created_at timestamp with time zone NOT NULL,
    last_used_at timestamp with time zone,
    removed_at timestamp with time zone,
    added_by text DEFAULT ''::text NOT NULL
);

CREATE TABLE public.events (
    seq bigint NOT NULL,
    account_id text NOT NULL,
    approval_id text NOT NULL,
    at timestamp with time zone NOT NULL,
    actor_kind text NOT NULL,
    actor text NOT NULL,
    step text NOT NULL,
    from_status text DEFAULT ''::text NOT NULL,
    to_status text DEFAULT ''::text NOT NULL,
    note text DEFAULT ''::text NOT NULL,
    data text
);

CREATE SEQUENCE public.events_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.events_seq_seq OWNED BY public.events.seq;

CREATE TABLE public.instances (
    id text NOT NULL,
    address text NOT NULL,
    seen_at timestamp with time zone NOT NULL
);

CREATE TABLE public.invites (
    token_hash text NOT NULL,
    account_id text NOT NULL,
    role text NOT NULL,
    subject text DEFAULT ''::text NOT NULL,
    created_by text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    used_at timestamp with time zone,
    used_by text DEFAULT ''::text NOT NULL,
    kind text DEFAULT 'new_person'::text NOT NULL,
    approval_id text DEFAULT ''::text NOT NULL,
    held boolean DEFAULT false NOT NULL
);

CREATE TABLE public.memberships (
    account_id text NOT NULL,
    person_id text NOT NULL,
    role text NOT NULL,
    created_at timestamp with time zone NOT NULL
);

CREATE TABLE public.oauth_clients (
    id text NOT NULL,
    name text NOT NULL,
    redirect_uris text NOT NULL,
    created_at timestamp with time zone NOT NULL
);

CREATE TABLE public.oauth_codes (
    id text NOT NULL,
    code_hash text NOT NULL,
    agent_id text NOT NULL,
    client_id text NOT NULL,
    redirect_uri text NOT NULL,
    code_challenge text NOT NULL,
    resource text NOT NULL,
    scopes text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    used_at timestamp with time zone
);

CREATE TABLE public.oauth_connections (
    agent_id text NOT NULL,
    account_id text NOT NULL,
    person_id text NOT NULL,
    client_id text NOT NULL,
    client_name text NOT NULL,
    redirect_host text NOT NULL,
    verified boolean NOT NULL,
    created_at timestamp with time zone NOT NULL
);

CREATE TABLE public.oauth_tokens (
    id text NOT NULL,
    token_hash text NOT NULL,
    kind text NOT NULL,
    family_id text NOT NULL,
    agent_id text NOT NULL,
    client_id text NOT NULL,
    resource text NOT NULL,
    scopes text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    used_at timestamp with time zone,
    revoked_at timestamp with time zone
);

CREATE TABLE public.oidc_access_tokens (
    token_sha256 text NOT NULL,
    account_id text NOT NULL,
    client_id text NOT NULL,
    request_id text NOT NULL,
    approval_id text NOT NULL,
    person_id text NOT NULL,
    subject text NOT NULL,
    scope text NOT NULL,
    authorization_details text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    revoked_at timestamp with time zone
);

CREATE TABLE public.oidc_assertions (
    client_id text NOT NULL,
    jti text NOT NULL,
    expires_at timestamp with time zone NOT NULL
);

CREATE TABLE public.oidc_client_people (
    client_id text NOT NULL,
    person_id text NOT NULL
);

CREATE TABLE public.oidc_clients (
    id text NOT NULL,
    account_id text NOT NULL,
    name text NOT NULL,
    auth_method text NOT NULL,
    secret_sha256 text DEFAULT ''::text NOT NULL,
    jwks text DEFAULT ''::text NOT NULL,
    delivery_mode text NOT NULL,
    notification_endpoint text DEFAULT ''::text NOT NULL,
    agent_id text NOT NULL,
    created_by text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    revoked_at timestamp with time zone
);

CREATE TABLE public.oidc_keys (
    kid text NOT NULL,
    private_jwk text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    retired_at timestamp with time zone,
    published_until timestamp with time zone
);

CREATE TABLE public.person_channels (
    account_id text NOT NULL,
    person_id text NOT NULL,
    kind text NOT NULL,
    address text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone NOT NULL
);

CREATE TABLE public.persons (
    id text NOT NULL,
    subject text NOT NULL,
    display_name text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    subject_key text
);

CREATE TABLE public.policies (
    id text NOT NULL,
    account_id text NOT NULL,
    approval_id text NOT NULL,
    scope text NOT NULL,
    requester text NOT NULL,
    device text DEFAULT ''::text NOT NULL,
    signer_id text NOT NULL,
    signer_subject text NOT NULL,
    credential_id text NOT NULL,
    signed_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    revoked_at timestamp with time zone,
    revoked_by text DEFAULT ''::text NOT NULL,
    revoke_note text DEFAULT ''::text NOT NULL,
    replaces text DEFAULT ''::text NOT NULL,
    replaced_by text DEFAULT ''::text NOT NULL,
    approved_count integer DEFAULT 0 NOT NULL,
    last_approved_at timestamp with time zone,
    created_at timestamp with time zone NOT NULL,
    target text DEFAULT ''::text NOT NULL
);

CREATE TABLE public.push_jobs (
    seq bigint NOT NULL,
    subscription_id text NOT NULL,
    person_id text NOT NULL,
    approval_id text DEFAULT ''::text NOT NULL,
    event text NOT NULL,
    body text NOT NULL,
    urgency text NOT NULL,
    topic text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    not_before timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    leased_until timestamp with time zone,
    done_at timestamp with time zone,
    outcome text DEFAULT ''::text NOT NULL,
    last_error text DEFAULT ''::text NOT NULL
);

CREATE SEQUENCE public.push_jobs_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.push_jobs_seq_seq OWNED BY public.push_jobs.seq;

CREATE TABLE public.push_links (
    id text NOT NULL,
    token_hash text NOT NULL,
    account_id text NOT NULL,
    approval_id text NOT NULL,
    person_id text NOT NULL,
    subscription_id text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    opened_at timestamp with time zone,
    spent_at timestamp with time zone
);

CREATE TABLE public.push_subscriptions (
    id text NOT NULL,
    person_id text NOT NULL,
    endpoint text NOT NULL,
    p256dh text NOT NULL,
    auth text NOT NULL,
    user_agent text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    last_success_at timestamp with time zone,
    failures integer DEFAULT 0 NOT NULL
);

CREATE TABLE public.runner_report_signatures (
    signature text NOT NULL,
    approval_id text NOT NULL,
    expires_at timestamp with time zone NOT NULL
);

CREATE TABLE public.runners (
    id text NOT NULL,
    account_id text NOT NULL,
    name text NOT NULL,
    public_key text NOT NULL,
    token_hash text NOT NULL,
    disabled boolean DEFAULT false NOT NULL,
    disabled_by text DEFAULT ''::text NOT NULL,
    disabled_at timestamp with time zone,
    created_by text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone NOT NULL
);

CREATE TABLE public.schema_migrations (
    version integer NOT NULL,
    name text NOT NULL,
    applied_at timestamp with time zone NOT NULL
);

CREATE TABLE public.settings (
    name text NOT NULL,
    value text NOT NULL
);

CREATE TABLE public.shared_channels (
    account_id text NOT NULL,
    name text NOT NULL,
    kind text NOT NULL,
    settings text NOT NULL,
    secret text DEFAULT ''::text NOT NULL,
    every_ask boolean DEFAULT false NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL
);

CREATE TABLE public.web_sessions (
    id_hash text NOT NULL,
    person_id text NOT NULL,
    account_id text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    last_seen_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL
);

CREATE TABLE public.work_columns (
    id text NOT NULL,
    account_id text NOT NULL,
    key text NOT NULL,
    name text NOT NULL,
    "position" integer NOT NULL,
    created_at timestamp with time zone NOT NULL
);

CREATE TABLE public.work_item_history (
    seq bigint NOT NULL,
    account_id text NOT NULL,
    item_id text NOT NULL,
    at timestamp with time zone NOT NULL,
    actor_kind text NOT NULL,
    actor text NOT NULL,
    action text NOT NULL,
    from_column text DEFAULT ''::text NOT NULL,
    to_column text DEFAULT ''::text NOT NULL,
    approval_id text DEFAULT ''::text NOT NULL,
    note text DEFAULT ''::text NOT NULL
);

CREATE SEQUENCE public.work_item_history_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.work_item_history_seq_seq OWNED BY public.work_item_history.seq;

CREATE TABLE public.work_items (
    id text NOT NULL,
    account_id text NOT NULL,
    column_key text NOT NULL,
    title text NOT NULL,
    description text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL
);

ALTER TABLE ONLY public.approval_signatures ALTER COLUMN seq SET DEFAULT nextval('public.approval_signatures_seq_seq'::regclass);

ALTER TABLE ONLY public.approvals ALTER COLUMN seq SET DEFAULT nextval('public.approvals_seq_seq'::regclass);

ALTER TABLE ONLY public.channel_messages ALTER COLUMN seq SET DEFAULT nextval('public.channel_messages_seq_seq'::regclass);

ALTER TABLE ONLY public.events ALTER COLUMN seq SET DEFAULT nextval('public.events_seq_seq'::regclass);

ALTER TABLE ONLY public.push_jobs ALTER COLUMN seq SET DEFAULT nextval('public.push_jobs_seq_seq'::regclass);

ALTER TABLE ONLY public.work_item_history ALTER COLUMN seq SET DEFAULT nextval('public.work_item_history_seq_seq'::regclass);

ALTER TABLE ONLY public.accounts
    ADD CONSTRAINT accounts_name_key UNIQUE (name);

ALTER TABLE ONLY public.accounts
    ADD CONSTRAINT accounts_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.acme_cache
    ADD CONSTRAINT acme_cache_pkey PRIMARY KEY (name);

ALTER TABLE ONLY public.agent_requests
    ADD CONSTRAINT agent_requests_pkey PRIMARY KEY (approval_id);

ALTER TABLE ONLY public.agent_sessions
    ADD CONSTRAINT agent_sessions_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.agents
    ADD CONSTRAINT agents_account_id_name_key UNIQUE (account_id, name);

ALTER TABLE ONLY public.agents
    ADD CONSTRAINT agents_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.agents
    ADD CONSTRAINT agents_token_hash_key UNIQUE (token_hash);

ALTER TABLE ONLY public.approval_rules
    ADD CONSTRAINT approval_rules_pkey PRIMARY KEY (account_id, id);

ALTER TABLE ONLY public.approval_signatures
    ADD CONSTRAINT approval_signatures_approval_id_person_id_key UNIQUE (approval_id, person_id);

ALTER TABLE ONLY public.approval_signatures
    ADD CONSTRAINT approval_signatures_pkey PRIMARY KEY (seq);

ALTER TABLE ONLY public.approvals
    ADD CONSTRAINT approvals_id_key UNIQUE (id);

ALTER TABLE ONLY public.approvals
    ADD CONSTRAINT approvals_pkey PRIMARY KEY (seq);

ALTER TABLE ONLY public.audit_chain
    ADD CONSTRAINT audit_chain_pkey PRIMARY KEY (seq);

ALTER TABLE ONLY public.aways
    ADD CONSTRAINT aways_pkey PRIMARY KEY (account_id, person_id);

ALTER TABLE ONLY public.ceremonies
    ADD CONSTRAINT ceremonies_pkey PRIMARY KEY (id_hash);

ALTER TABLE ONLY public.channel_messages
    ADD CONSTRAINT channel_messages_key_key UNIQUE (key);

ALTER TABLE ONLY public.channel_messages
    ADD CONSTRAINT channel_messages_pkey PRIMARY KEY (seq);

ALTER TABLE ONLY public.ciba_requests
    ADD CONSTRAINT ciba_requests_approval_id_key UNIQUE (approval_id);

ALTER TABLE ONLY public.ciba_requests
    ADD CONSTRAINT ciba_requests_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.decision_challenges
    ADD CONSTRAINT decision_challenges_pkey PRIMARY KEY (nonce);

ALTER TABLE ONLY public.device_grants
    ADD CONSTRAINT device_grants_pkey PRIMARY KEY (token_hash);

ALTER TABLE ONLY public.device_keys
    ADD CONSTRAINT device_keys_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.events
    ADD CONSTRAINT events_pkey PRIMARY KEY (seq);

ALTER TABLE ONLY public.instances
    ADD CONSTRAINT instances_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.invites
    ADD CONSTRAINT invites_pkey PRIMARY KEY (token_hash);

ALTER TABLE ONLY public.memberships
    ADD CONSTRAINT memberships_pkey PRIMARY KEY (account_id, person_id);

ALTER TABLE ONLY public.oauth_clients
    ADD CONSTRAINT oauth_clients_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.oauth_codes
    ADD CONSTRAINT oauth_codes_code_hash_key UNIQUE (code_hash);

ALTER TABLE ONLY public.oauth_codes
    ADD CONSTRAINT oauth_codes_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.oauth_connections
    ADD CONSTRAINT oauth_connections_pkey PRIMARY KEY (agent_id);

ALTER TABLE ONLY public.oauth_tokens
    ADD CONSTRAINT oauth_tokens_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.oauth_tokens
    ADD CONSTRAINT oauth_tokens_token_hash_key UNIQUE (token_hash);

ALTER TABLE ONLY public.oidc_access_tokens
    ADD CONSTRAINT oidc_access_tokens_pkey PRIMARY KEY (token_sha256);

ALTER TABLE ONLY public.oidc_assertions
    ADD CONSTRAINT oidc_assertions_pkey PRIMARY KEY (client_id, jti);

ALTER TABLE ONLY public.oidc_client_people
    ADD CONSTRAINT oidc_client_people_pkey PRIMARY KEY (client_id, person_id);

ALTER TABLE ONLY public.oidc_clients
    ADD CONSTRAINT oidc_clients_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.oidc_keys
    ADD CONSTRAINT oidc_keys_pkey PRIMARY KEY (kid);

ALTER TABLE ONLY public.person_channels
    ADD CONSTRAINT person_channels_pkey PRIMARY KEY (account_id, person_id, kind);

ALTER TABLE ONLY public.persons
    ADD CONSTRAINT persons_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.persons
    ADD CONSTRAINT persons_subject_key UNIQUE (subject);

ALTER TABLE ONLY public.policies
    ADD CONSTRAINT policies_approval_id_key UNIQUE (approval_id);

ALTER TABLE ONLY public.policies
    ADD CONSTRAINT policies_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.push_jobs
    ADD CONSTRAINT push_jobs_pkey PRIMARY KEY (seq);

ALTER TABLE ONLY public.push_links
    ADD CONSTRAINT push_links_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.push_links
    ADD CONSTRAINT push_links_token_hash_key UNIQUE (token_hash);

ALTER TABLE ONLY public.push_subscriptions
    ADD CONSTRAINT push_subscriptions_endpoint_key UNIQUE (endpoint);

ALTER TABLE ONLY public.push_subscriptions
    ADD CONSTRAINT push_subscriptions_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.runner_report_signatures
    ADD CONSTRAINT runner_report_signatures_pkey PRIMARY KEY (signature);

ALTER TABLE ONLY public.runners
    ADD CONSTRAINT runners_account_id_name_key UNIQUE (account_id, name);

ALTER TABLE ONLY public.runners
    ADD CONSTRAINT runners_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.runners
    ADD CONSTRAINT runners_token_hash_key UNIQUE (token_hash);

ALTER TABLE ONLY public.schema_migrations
    ADD CONSTRAINT schema_migrations_pkey PRIMARY KEY (version);

ALTER TABLE ONLY public.settings
    ADD CONSTRAINT settings_pkey PRIMARY KEY (name);

ALTER TABLE ONLY public.shared_channels
    ADD CONSTRAINT shared_channels_pkey PRIMARY KEY (account_id, name);

ALTER TABLE ONLY public.web_sessions
    ADD CONSTRAINT web_sessions_pkey PRIMARY KEY (id_hash);

ALTER TABLE ONLY public.work_columns
    ADD CONSTRAINT work_columns_account_id_key_key UNIQUE (account_id, key);

ALTER TABLE ONLY public.work_columns
    ADD CONSTRAINT work_columns_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.work_item_history
    ADD CONSTRAINT work_item_history_pkey PRIMARY KEY (seq);

ALTER TABLE ONLY public.work_items
    ADD CONSTRAINT work_items_pkey PRIMARY KEY (id);

CREATE UNIQUE INDEX agent_requests_key ON public.agent_requests USING btree (agent_id, idempotency_key);

CREATE INDEX agent_requests_session ON public.agent_requests USING btree (session_id, delivered_at);

CREATE INDEX agent_sessions_idle ON public.agent_sessions USING btree (heartbeat_at) WHERE (ended_at IS NULL);

CREATE INDEX agent_sessions_open ON public.agent_sessions USING btree (account_id, ended_at, heartbeat_at);

CREATE UNIQUE INDEX agents_service ON public.agents USING btree (account_id) WHERE service;

CREATE INDEX approval_signatures_approval ON public.approval_signatures USING btree (approval_id, seq);

CREATE INDEX approvals_account ON public.approvals USING btree (account_id, seq);

CREATE INDEX approvals_active ON public.approvals USING btree (account_id, seq) WHERE (status = ANY (ARRAY['approved'::text, 'in_progress'::text]));

CREATE INDEX approvals_expiry ON public.approvals USING btree (expires_at) WHERE (status = ANY (ARRAY['pending'::text, 'question'::text]));

CREATE INDEX approvals_head ON public.approvals USING btree (account_id, head, seq) WHERE (head <> ''::text);

CREATE INDEX approvals_job ON public.approvals USING btree (account_id, job_id, seq) WHERE (job_id <> ''::text);

CREATE INDEX approvals_open ON public.approvals USING btree (account_id, seq) WHERE (status = ANY (ARRAY['pending'::text, 'question'::text]));

CREATE INDEX approvals_payload ON public.approvals USING btree (account_id, payload_sha256, seq);

CREATE INDEX approvals_repo ON public.approvals USING btree (account_id, repo_key, pr_number, seq) WHERE (repo_key <> ''::text);

CREATE INDEX approvals_repo_seq ON public.approvals USING btree (account_id, repo_key, seq, status);

CREATE INDEX approvals_runner ON public.approvals USING btree (runner_id, seq) WHERE (runner_id <> ''::text);

CREATE UNIQUE INDEX audit_chain_position ON public.audit_chain USING btree (account_id, pos);

CREATE INDEX ceremonies_expiry ON public.ceremonies USING btree (expires_at);

CREATE INDEX channel_messages_approval ON public.channel_messages USING btree (approval_id, event);

CREATE INDEX channel_messages_due ON public.channel_messages USING btree (done_at, not_before);

CREATE INDEX channel_messages_person ON public.channel_messages USING btree (person_id, event, created_at);

CREATE INDEX ciba_requests_client ON public.ciba_requests USING btree (client_id, created_at);

CREATE INDEX ciba_requests_notify ON public.ciba_requests USING btree (notify_due_at);

CREATE INDEX ciba_requests_person ON public.ciba_requests USING btree (person_id, created_at);

CREATE INDEX decision_challenges_approval ON public.decision_challenges USING btree (approval_id);

CREATE INDEX decision_challenges_expiry ON public.decision_challenges USING btree (expires_at);

CREATE INDEX device_grants_expiry ON public.device_grants USING btree (expires_at);

CREATE INDEX device_keys_person ON public.device_keys USING btree (person_id);

CREATE INDEX events_account_step ON public.events USING btree (account_id, step, seq) WHERE (step <> 'created'::text);

CREATE INDEX events_approval_account ON public.events USING btree (approval_id, account_id, seq);

CREATE INDEX invites_account ON public.invites USING btree (account_id, created_at);

CREATE INDEX memberships_person ON public.memberships USING btree (person_id);

CREATE INDEX oauth_codes_expiry ON public.oauth_codes USING btree (expires_at);

CREATE INDEX oauth_connections_person ON public.oauth_connections USING btree (person_id, account_id);

CREATE INDEX oauth_tokens_agent ON public.oauth_tokens USING btree (agent_id);

CREATE INDEX oauth_tokens_expiry ON public.oauth_tokens USING btree (expires_at);

CREATE INDEX oauth_tokens_family ON public.oauth_tokens USING btree (family_id);

CREATE INDEX oidc_assertions_expiry ON public.oidc_assertions USING btree (expires_at);

CREATE INDEX oidc_clients_account ON public.oidc_clients USING btree (account_id, created_at);

CREATE UNIQUE INDEX oidc_keys_one_current ON public.oidc_keys USING btree (((retired_at IS NULL))) WHERE (retired_at IS NULL);

CREATE UNIQUE INDEX persons_subject_folded ON public.persons USING btree (subject_key);

CREATE INDEX policies_account ON public.policies USING btree (account_id, created_at);

CREATE INDEX policies_on ON public.policies USING btree (account_id, expires_at) WHERE (revoked_at IS NULL);

CREATE INDEX push_jobs_approval ON public.push_jobs USING btree (approval_id, event);

CREATE INDEX push_jobs_due ON public.push_jobs USING btree (done_at, not_before);

CREATE INDEX push_jobs_person ON public.push_jobs USING btree (person_id, event, created_at);

CREATE INDEX push_jobs_subscription ON public.push_jobs USING btree (subscription_id, event);

CREATE INDEX push_links_expiry ON public.push_links USING btree (expires_at);

CREATE INDEX push_links_person ON public.push_links USING btree (person_id);

CREATE INDEX push_links_subscription ON public.push_links USING btree (subscription_id, approval_id);

CREATE INDEX push_subscriptions_person ON public.push_subscriptions USING btree (person_id);

CREATE INDEX runner_report_signatures_expiry ON public.runner_report_signatures USING btree (expires_at);

CREATE INDEX web_sessions_expiry ON public.web_sessions USING btree (expires_at);

CREATE INDEX web_sessions_person ON public.web_sessions USING btree (person_id);

CREATE INDEX work_item_history_item ON public.work_item_history USING btree (account_id, item_id, seq);

CREATE INDEX work_items_column ON public.work_items USING btree (account_id, column_key, created_at);

ALTER TABLE ONLY public.agent_requests
    ADD CONSTRAINT agent_requests_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);

ALTER TABLE ONLY public.agent_requests
    ADD CONSTRAINT agent_requests_agent_id_fkey FOREIGN KEY (agent_id) REFERENCES public.agents(id);

ALTER TABLE ONLY public.agent_sessions
    ADD CONSTRAINT agent_sessions_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);

ALTER TABLE ONLY public.agent_sessions
    ADD CONSTRAINT agent_sessions_agent_id_fkey FOREIGN KEY (agent_id) REFERENCES public.agents(id);

ALTER TABLE ONLY public.agents
    ADD CONSTRAINT agents_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);

ALTER TABLE ONLY public.agents
    ADD CONSTRAINT agents_for_person_id_fkey FOREIGN KEY (for_person_id) REFERENCES public.persons(id);

ALTER TABLE ONLY public.approval_rules
    ADD CONSTRAINT approval_rules_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);

ALTER TABLE ONLY public.approval_signatures
    ADD CONSTRAINT approval_signatures_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);

ALTER TABLE ONLY public.approval_signatures
    ADD CONSTRAINT approval_signatures_person_id_fkey FOREIGN KEY (person_id) REFERENCES public.persons(id);

ALTER TABLE ONLY public.aways
    ADD CONSTRAINT aways_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);

ALTER TABLE ONLY public.aways
    ADD CONSTRAINT aways_delegate_id_fkey FOREIGN KEY (delegate_id) REFERENCES public.persons(id);

ALTER TABLE ONLY public.aways
    ADD CONSTRAINT aways_person_id_fkey FOREIGN KEY (person_id) REFERENCES public.persons(id);

ALTER TABLE ONLY public.ciba_requests
    ADD CONSTRAINT ciba_requests_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);

ALTER TABLE ONLY public.ciba_requests
    ADD CONSTRAINT ciba_requests_client_id_fkey FOREIGN KEY (client_id) REFERENCES public.oidc_clients(id);

ALTER TABLE ONLY public.ciba_requests
    ADD CONSTRAINT ciba_requests_person_id_fkey FOREIGN KEY (person_id) REFERENCES public.persons(id);

ALTER TABLE ONLY public.device_grants
    ADD CONSTRAINT device_grants_person_id_fkey FOREIGN KEY (person_id) REFERENCES public.persons(id);

ALTER TABLE ONLY public.device_keys
    ADD CONSTRAINT device_keys_person_id_fkey FOREIGN KEY (person_id) REFERENCES public.persons(id);

ALTER TABLE ONLY public.invites
    ADD CONSTRAINT invites_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);

ALTER TABLE ONLY public.memberships
    ADD CONSTRAINT memberships_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);

ALTER TABLE ONLY public.memberships
    ADD CONSTRAINT memberships_person_id_fkey FOREIGN KEY (person_id) REFERENCES public.persons(id);

ALTER TABLE ONLY public.oauth_codes
    ADD CONSTRAINT oauth_codes_agent_id_fkey FOREIGN KEY (agent_id) REFERENCES public.agents(id);

ALTER TABLE ONLY public.oauth_connections
    ADD CONSTRAINT oauth_connections_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);

ALTER TABLE ONLY public.oauth_connections
    ADD CONSTRAINT oauth_connections_agent_id_fkey FOREIGN KEY (agent_id) REFERENCES public.agents(id);

ALTER TABLE ONLY public.oauth_connections
    ADD CONSTRAINT oauth_connections_person_id_fkey FOREIGN KEY (person_id) REFERENCES public.persons(id);

ALTER TABLE ONLY public.oauth_tokens
    ADD CONSTRAINT oauth_tokens_agent_id_fkey FOREIGN KEY (agent_id) REFERENCES public.agents(id);

ALTER TABLE ONLY public.oidc_access_tokens
    ADD CONSTRAINT oidc_access_tokens_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);

ALTER TABLE ONLY public.oidc_client_people
    ADD CONSTRAINT oidc_client_people_client_id_fkey FOREIGN KEY (client_id) REFERENCES public.oidc_clients(id);

ALTER TABLE ONLY public.oidc_client_people
    ADD CONSTRAINT oidc_client_people_person_id_fkey FOREIGN KEY (person_id) REFERENCES public.persons(id);

ALTER TABLE ONLY public.oidc_clients
    ADD CONSTRAINT oidc_clients_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);

ALTER TABLE ONLY public.oidc_clients
    ADD CONSTRAINT oidc_clients_agent_id_fkey FOREIGN KEY (agent_id) REFERENCES public.agents(id);

ALTER TABLE ONLY public.person_channels
    ADD CONSTRAINT person_channels_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);

ALTER TABLE ONLY public.person_channels
    ADD CONSTRAINT person_channels_person_id_fkey FOREIGN KEY (person_id) REFERENCES public.persons(id);

ALTER TABLE ONLY public.policies
    ADD CONSTRAINT policies_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);

ALTER TABLE ONLY public.policies
    ADD CONSTRAINT policies_signer_id_fkey FOREIGN KEY (signer_id) REFERENCES public.persons(id);

ALTER TABLE ONLY public.push_links
    ADD CONSTRAINT push_links_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);

ALTER TABLE ONLY public.push_subscriptions
    ADD CONSTRAINT push_subscriptions_person_id_fkey FOREIGN KEY (person_id) REFERENCES public.persons(id);

ALTER TABLE ONLY public.runners
    ADD CONSTRAINT runners_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);

ALTER TABLE ONLY public.shared_channels
    ADD CONSTRAINT shared_channels_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);

ALTER TABLE ONLY public.web_sessions
    ADD CONSTRAINT web_sessions_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);

ALTER TABLE ONLY public.web_sessions
    ADD CONSTRAINT web_sessions_person_id_fkey FOREIGN KEY (person_id) REFERENCES public.persons(id);

ALTER TABLE ONLY public.work_columns
    ADD CONSTRAINT work_columns_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);

ALTER TABLE ONLY public.work_item_history
    ADD CONSTRAINT work_item_history_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);

ALTER TABLE ONLY public.work_items
    ADD CONSTRAINT work_items_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);
