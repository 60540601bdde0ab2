-- SPDX-License-Identifier: Apache-2.0
-- Issue 28: the signal algorithm's own field, the signal a policy trips
-- on ("password_breached": the caller found the password tried in a
-- breach corpus). NULL in every other policy's row: the record has the
-- field only for signal, and reads a NULL as absent. No CHECK on its
-- value: SQLite cannot change one in place, and the next signal would
-- need the table copied; the validator refuses an unknown one.
ALTER TABLE policies ADD COLUMN signal TEXT;
