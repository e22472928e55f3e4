-- podtax analyzer DuckDB schema. The analyzer is the only writer. Every table is keyed so a
-- redelivered event changes nothing (idempotent on run id / event id).

-- Every raw log ever received, kept verbatim so `podtax reparse` can re-derive results.
CREATE TABLE IF NOT EXISTS raw_logs (
    run_id        VARCHAR PRIMARY KEY,
    event_id      VARCHAR NOT NULL,
    campaign      VARCHAR NOT NULL,
    cluster       VARCHAR NOT NULL,
    node          VARCHAR NOT NULL,
    env           VARCHAR NOT NULL,          -- 'host' | 'kubernetes'
    test          VARCHAR NOT NULL,          -- template name
    params        JSON NOT NULL,
    params_key    VARCHAR NOT NULL,          -- canonical 'k=v k=v', sorted by key
    attempt       INTEGER NOT NULL,
    started_at    TIMESTAMPTZ NOT NULL,
    ended_at      TIMESTAMPTZ NOT NULL,
    exit_code     INTEGER,
    stdout        VARCHAR NOT NULL,
    stderr        VARCHAR NOT NULL,
    tool_version  VARCHAR,
    truncated     BOOLEAN NOT NULL,
    timed_out     BOOLEAN NOT NULL,
    provenance    JSON NOT NULL,
    imported_from VARCHAR,
    received_at   TIMESTAMPTZ NOT NULL
);

-- One row per run outcome: status 'ok' (a result) or 'failed' (a recorded failure).
-- A result for a run id replaces a failure of the same run id (e.g. after `podtax reparse`).
CREATE TABLE IF NOT EXISTS runs (
    run_id          VARCHAR PRIMARY KEY,
    event_id        VARCHAR NOT NULL,
    campaign        VARCHAR NOT NULL,
    cluster         VARCHAR NOT NULL,
    node            VARCHAR NOT NULL,
    env             VARCHAR NOT NULL,
    test            VARCHAR NOT NULL,
    params          JSON NOT NULL,
    params_key      VARCHAR NOT NULL,
    attempt         INTEGER NOT NULL,
    sequence        INTEGER NOT NULL,
    status          VARCHAR NOT NULL,        -- 'ok' | 'failed'
    tool            VARCHAR,
    tool_version    VARCHAR,
    tool_build      VARCHAR,
    parser_version  VARCHAR,
    flags           VARCHAR[] NOT NULL,      -- 'SHORT: sentence', ...
    started_at      TIMESTAMPTZ,
    ended_at        TIMESTAMPTZ,
    qos_class       VARCHAR,
    cpu_limit       DOUBLE,                  -- cores; NULL = unlimited
    nr_throttled    BIGINT,                  -- throttled periods during the run (after - before); NULL unknown
    throttled_usec  BIGINT,                  -- throttled time during the run, microseconds
    image           VARCHAR,
    failure_stage   VARCHAR,
    failure_reason  VARCHAR,
    failure_detail  VARCHAR,
    stored_at       TIMESTAMPTZ NOT NULL,
    tool_arch       VARCHAR                  -- the tool's executable's architecture (arm, aarch64...); NULL unknown
);
ALTER TABLE runs ADD COLUMN IF NOT EXISTS tool_arch VARCHAR;  -- files made before it

-- Metric values of 'ok' runs: one row per run and metric. No index: (run_id, name) is unique because
-- metrics are written only in the transaction that inserts their run's row (runs' key refuses a second
-- one) and a result's names are de-duplicated first (store.metric_rows). An index here held ~1.4 M
-- keys at 100,000 runs and was the largest part of the analyzer's memory growth. Files created
-- before keep their key; it changes nothing for them.
CREATE TABLE IF NOT EXISTS metrics (
    run_id           VARCHAR NOT NULL,
    name             VARCHAR NOT NULL,
    value            DOUBLE NOT NULL,
    unit             VARCHAR NOT NULL,
    higher_is_better BOOLEAN NOT NULL
);

CREATE TABLE IF NOT EXISTS host_facts (
    event_id      VARCHAR PRIMARY KEY,
    cluster       VARCHAR NOT NULL,
    node          VARCHAR NOT NULL,
    seen_at       TIMESTAMPTZ NOT NULL,
    kernel        VARCHAR, os VARCHAR, cpu_model VARCHAR, hw_threads INTEGER, arch VARCHAR,
    tool_versions JSON
);

CREATE TABLE IF NOT EXISTS placements (
    event_id   VARCHAR PRIMARY KEY,
    placed_at  TIMESTAMPTZ NOT NULL,
    namespace  VARCHAR, pod VARCHAR, pod_uid VARCHAR, node VARCHAR, test VARCHAR,
    candidates JSON, message VARCHAR
);

CREATE TABLE IF NOT EXISTS campaigns (
    campaign     VARCHAR PRIMARY KEY,
    submitted_at TIMESTAMPTZ NOT NULL,
    spec         JSON NOT NULL
);

-- Every submission of a campaign name seen (its campaign.submitted time): a time seen again is a redelivery; a new
-- one becomes the name's current submission (campaigns.submitted_at) in stream order (submissions.py). A file
-- written before it has only its current submissions (in campaigns), which submissions.py counts as seen.
CREATE TABLE IF NOT EXISTS campaign_submissions (
    campaign     VARCHAR NOT NULL,
    submitted_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (campaign, submitted_at)
);

-- Per-object phase latencies of control-plane runs (volume-churn, pod-startup), read from their raw
-- logs (docs/control-plane.md): one row per run, object and phase. env = the side; backend = the API timed.
CREATE TABLE IF NOT EXISTS phases (
    run_id      VARCHAR NOT NULL,
    campaign    VARCHAR NOT NULL,
    cluster     VARCHAR NOT NULL,
    node        VARCHAR NOT NULL,
    env         VARCHAR NOT NULL,
    backend     VARCHAR NOT NULL,
    test        VARCHAR NOT NULL,
    params_key  VARCHAR NOT NULL,
    object      VARCHAR NOT NULL,            -- claim, volume or pod name
    phase       VARCHAR NOT NULL,            -- accepted, provisioned, bound, deleted, ... (podtax.phases)
    start_s     DOUBLE NOT NULL,             -- the phase's start, seconds after the run's t0
    latency_s   DOUBLE NOT NULL,
    lower_bound BOOLEAN NOT NULL DEFAULT false, -- an object given up while waiting: latency_s is until then
    upper_bound BOOLEAN NOT NULL DEFAULT false, -- its end seen only by a re-list after a dropped watch (WATCH_GAP)
    PRIMARY KEY (run_id, object, phase)
);
ALTER TABLE phases ADD COLUMN IF NOT EXISTS lower_bound BOOLEAN DEFAULT false;  -- files made before it
ALTER TABLE phases ADD COLUMN IF NOT EXISTS upper_bound BOOLEAN DEFAULT false;  -- files made before it

-- Imported runs dropped as duplicates of a run stored under another run id (store_imports.py): an older podtax
-- derived an import's run id from the node spelled otherwise. Their results, arriving before or after, are dropped.
CREATE TABLE IF NOT EXISTS imported_duplicates (
    run_id       VARCHAR PRIMARY KEY,
    kept_run_id  VARCHAR NOT NULL,
    received_at  TIMESTAMPTZ NOT NULL
);

-- Nodes whose older runs the user retired (podtax retire, POST /api/retired): a score counts only the node's runs
-- started at or after before_time (scores.COUNTED), e.g. after a hardware change or a kernel upgrade. The runs stay
-- stored for reports and comparisons. One row a node (a later retire replaces it); undoing it deletes the row.
CREATE TABLE IF NOT EXISTS retired (
    cluster     VARCHAR NOT NULL,
    node        VARCHAR NOT NULL,
    before_time TIMESTAMPTZ NOT NULL,
    retired_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (cluster, node)
);
