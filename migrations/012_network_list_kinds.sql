-- SPDX-License-Identifier: Apache-2.0
-- Issue 39: list entries of what the network databases say of an address,
-- its autonomous system ("asn", kept as the decimal number "174") and its
-- country ("ip_country", the ISO 3166-1 alpha-2 code "FR"). As in
-- 005_list_kinds, SQLite cannot change a CHECK in place, so the table is
-- copied into one that allows the two new kinds; ids, the AUTOINCREMENT
-- sequence and each row's version (011_fleet) are kept. Dropping the old
-- table drops its triggers, so 011's are made again, word for word. The
-- copy fires none of them: it changes no entry, and a fleet member's set
-- is still the fleet's.
CREATE TABLE lists_new (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    list       TEXT NOT NULL CHECK (list IN ('allow', 'deny')),
    kind       TEXT NOT NULL CHECK (kind IN ('ip', 'user', 'phone',
                                             'country', 'phone_prefix',
                                             'asn', 'ip_country')),
    value      TEXT NOT NULL,
    endpoint   TEXT NOT NULL DEFAULT '*', -- an endpoint name, or * for all
    note       TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    version    INTEGER NOT NULL DEFAULT 0,
    UNIQUE (list, kind, value, endpoint)
);
INSERT INTO lists_new (id, list, kind, value, endpoint, note, created_at,
                       version)
    SELECT id, list, kind, value, endpoint, note, created_at, version
      FROM lists;
-- The copy sets the new table's sequence to the highest id left, not to
-- the highest ever given: an id of a deleted entry would be given again,
-- and its audit rows would describe two entries.
DELETE FROM sqlite_sequence WHERE name = 'lists_new';
INSERT INTO sqlite_sequence (name, seq)
    SELECT 'lists_new', seq FROM sqlite_sequence WHERE name = 'lists';
DROP TABLE lists;
ALTER TABLE lists_new RENAME TO lists;
CREATE TRIGGER fleet_touched_lists_insert AFTER INSERT ON lists
    BEGIN UPDATE fleet SET pristine = 0, touched = 1 WHERE id = 1; END;
CREATE TRIGGER fleet_touched_lists_update AFTER UPDATE ON lists
    BEGIN UPDATE fleet SET pristine = 0, touched = 1 WHERE id = 1; END;
CREATE TRIGGER fleet_touched_lists_delete AFTER DELETE ON lists
    BEGIN UPDATE fleet SET pristine = 0, touched = 1 WHERE id = 1; END;
