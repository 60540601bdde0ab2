-- SPDX-License-Identifier: Apache-2.0
-- The conversion algorithm's min_ratio (verified codes per send, above 0
-- and at most 1), for SMS pumping. NULL in every other policy's row: the
-- record has the field only for conversion, and reads a NULL as absent.
ALTER TABLE policies ADD COLUMN min_ratio REAL
    CHECK (min_ratio IS NULL OR (min_ratio > 0 AND min_ratio <= 1));
