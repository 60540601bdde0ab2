-- SPDX-License-Identifier: Apache-2.0
-- Issue 37: the fleet (service/fleet/ag_fleet.h, docs/decisions/fleet.md).
-- One row says where this database stands in its fleet's history: the
-- fleet's name, the epoch (the history's id), the version and hash of the
-- last record applied, whether the database is a member, whether its set
-- is still only a seed (pristine: an instance whose database is takes the
-- fleet's set), and the instance's own id, made once. fleet_log keeps the
-- hash of each record applied, so that a history Redis gives back can be
-- compared with this one. Audit rows of fleet records carry the record's
-- version and the instance that took the change; policies and list
-- entries carry the version that last wrote them (a policy's is its ETag).
-- A database made before this migration is not pristine: whether it was
-- changed since its seed cannot be told once its audit was pruned.
-- touched marks a change of the policies or lists that no fleet record
-- made (a hand edit of a stopped member's file, a backup restored by
-- hand): every record applied clears it, the tables' triggers set it, and
-- a member that finds it set compares its set with the fleet's.
CREATE TABLE fleet (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    name     TEXT NOT NULL DEFAULT '',
    epoch    TEXT NOT NULL DEFAULT '',
    version  INTEGER NOT NULL DEFAULT 0 CHECK (version >= 0),
    hash     TEXT NOT NULL DEFAULT '',
    member   INTEGER NOT NULL DEFAULT 0 CHECK (member IN (0, 1)),
    pristine INTEGER NOT NULL DEFAULT 0 CHECK (pristine IN (0, 1)),
    instance TEXT NOT NULL DEFAULT '',
    replaces TEXT NOT NULL DEFAULT '',
    touched  INTEGER NOT NULL DEFAULT 0 CHECK (touched IN (0, 1))
);
INSERT INTO fleet (id) VALUES (1);
CREATE TABLE fleet_log (
    version INTEGER PRIMARY KEY,
    epoch   TEXT NOT NULL,
    hash    TEXT NOT NULL
);
ALTER TABLE audit ADD COLUMN fleet_version INTEGER;
ALTER TABLE audit ADD COLUMN instance TEXT;
ALTER TABLE policies ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
ALTER TABLE lists ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
-- Any change to the policies or lists leaves the seed's set behind.
CREATE TRIGGER fleet_touched_policies_insert AFTER INSERT ON policies
    BEGIN UPDATE fleet SET pristine = 0, touched = 1 WHERE id = 1; END;
CREATE TRIGGER fleet_touched_policies_update AFTER UPDATE ON policies
    BEGIN UPDATE fleet SET pristine = 0, touched = 1 WHERE id = 1; END;
CREATE TRIGGER fleet_touched_policies_delete AFTER DELETE ON policies
    BEGIN UPDATE fleet SET pristine = 0, touched = 1 WHERE id = 1; END;
CREATE TRIGGER fleet_touched_lists_insert AFTER INSERT ON lists
    BEGIN UPDATE fleet SET pristine = 0, touched = 1 WHERE id = 1; END;
CREATE TRIGGER fleet_touched_lists_update AFTER UPDATE ON lists
    BEGIN UPDATE fleet SET pristine = 0, touched = 1 WHERE id = 1; END;
CREATE TRIGGER fleet_touched_lists_delete AFTER DELETE ON lists
    BEGIN UPDATE fleet SET pristine = 0, touched = 1 WHERE id = 1; END;
