-- SPDX-License-Identifier: Apache-2.0
-- Every change to policies and lists, written in the same transaction as
-- the change itself. before/after hold the JSON record (NULL when absent).
CREATE TABLE audit (
    id     INTEGER PRIMARY KEY AUTOINCREMENT,
    at     TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    action TEXT NOT NULL,
    name   TEXT NOT NULL,
    actor  TEXT NOT NULL,
    before TEXT,
    after  TEXT
);

-- Allow and deny lists. value is an IP address or CIDR in canonical text,
-- or, for users and phones, the keyed digest of the normalised identifier:
-- the plaintext is never stored.
CREATE TABLE lists (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    list       TEXT NOT NULL CHECK (list IN ('allow', 'deny')),
    kind       TEXT NOT NULL CHECK (kind IN ('ip', 'user', 'phone')),
    value      TEXT NOT NULL,
    endpoint   TEXT NOT NULL DEFAULT '*', -- an endpoint name, or * for all
    note       TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    UNIQUE (list, kind, value, endpoint)
);
