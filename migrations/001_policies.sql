-- SPDX-License-Identifier: Apache-2.0
-- The policy record, one row per policy. Columns mirror the JSON record;
-- "key" holds the JSON array of key kinds. Values are validated by the
-- service before they are written (ag_policy_from_json); the CHECKs are a
-- second line against hand edits.
CREATE TABLE policies (
    name      TEXT PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 64),
    endpoint  TEXT NOT NULL,
    key       TEXT NOT NULL,
    algorithm TEXT NOT NULL,
    "limit"   INTEGER NOT NULL CHECK ("limit" > 0),
    window_s  INTEGER NOT NULL CHECK (window_s > 0),
    block_s   INTEGER NOT NULL DEFAULT 0 CHECK (block_s >= 0),
    counts    TEXT NOT NULL DEFAULT 'attempts',
    fail      TEXT NOT NULL DEFAULT 'open',
    mode      TEXT NOT NULL DEFAULT 'enforce',
    enabled   INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
