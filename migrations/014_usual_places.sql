-- SPDX-License-Identifier: Apache-2.0
-- Issue 40: a surge policy's "scope" ("risky": while raised, its shield
-- challenges only the checks with a risk signal). NULL in every other
-- row, and in a surge policy of the default scope ("untrusted"): the
-- record carries the field only when it is "risky". As in 013, no CHECK:
-- the validator refuses what is not one.
ALTER TABLE policies ADD COLUMN scope TEXT;
