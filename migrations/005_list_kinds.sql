-- SPDX-License-Identifier: Apache-2.0
-- Lists of country calling codes ("+44") and number ranges ("+4479"),
-- against SMS pumping (issue 17). SQLite cannot change a CHECK in place,
-- so the table is copied into one that allows the two new kinds; ids and
-- the AUTOINCREMENT sequence are kept. Calling codes and ranges
-- are stored as written: they name no one.
CREATE TABLE lists_new (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    list       TEXT NOT NULL CHECK (list IN ('allow', 'deny')),
    kind       TEXT NOT NULL CHECK (kind IN ('ip', 'user', 'phone',
                                             'country', 'phone_prefix')),
    value      TEXT NOT NULL,
    endpoint   TEXT NOT NULL DEFAULT '*', -- an endpoint name, or * for all
    note       TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    UNIQUE (list, kind, value, endpoint)
);
INSERT INTO lists_new (id, list, kind, value, endpoint, note, created_at)
    SELECT id, list, kind, value, endpoint, note, created_at FROM lists;
-- The copy sets the new table's sequence to the highest id left, not to
-- the highest ever given: an id of a deleted entry would be given again,
-- and its audit rows would describe two entries.
DELETE FROM sqlite_sequence WHERE name = 'lists_new';
INSERT INTO sqlite_sequence (name, seq)
    SELECT 'lists_new', seq FROM sqlite_sequence WHERE name = 'lists';
DROP TABLE lists;
ALTER TABLE lists_new RENAME TO lists;
