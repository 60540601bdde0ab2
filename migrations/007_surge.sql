-- SPDX-License-Identifier: Apache-2.0
-- Issue 27: the surge algorithm's own fields (a site-wide shield): the
-- factor over the baseline above which it is raised, how far back the
-- baseline is learned, and the failure reasons it counts (a JSON list).
-- NULL in every other policy's row: the record has the fields only for
-- surge, and reads a NULL as absent.
ALTER TABLE policies ADD COLUMN factor REAL
    CHECK (factor IS NULL OR (factor >= 1.5 AND factor <= 100));
ALTER TABLE policies ADD COLUMN baseline_s INTEGER
    CHECK (baseline_s IS NULL OR baseline_s > 0);
ALTER TABLE policies ADD COLUMN reasons TEXT;
