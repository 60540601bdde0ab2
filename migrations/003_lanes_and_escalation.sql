-- SPDX-License-Identifier: Apache-2.0
-- Issue 14: the lane a policy counts in (requests from trusted devices or
-- not), what it does when it trips (deny or ask for a challenge), and
-- blocks that grow for a key blocked again within a day. Existing rows
-- keep their behaviour: every lane, deny, no growth (block_max_s = block_s).
ALTER TABLE policies ADD COLUMN applies_to TEXT NOT NULL DEFAULT 'all';
ALTER TABLE policies ADD COLUMN action TEXT NOT NULL DEFAULT 'deny';
ALTER TABLE policies ADD COLUMN block_growth INTEGER NOT NULL DEFAULT 1
    CHECK (block_growth >= 1);
ALTER TABLE policies ADD COLUMN block_max_s INTEGER NOT NULL DEFAULT 0
    CHECK (block_max_s >= 0);
UPDATE policies SET block_max_s = block_s;
