-- SPDX-License-Identifier: Apache-2.0
-- Issue 36: the name challenge_pass is the service's own (a challenge
-- nonce's single use is counted under it, in answers, metrics and Redis
-- keys), and the validator refuses it. A policy that had the name is
-- renamed challenge_pass.renamed here, audited, so that it still loads;
-- its counters start over under the new name.
UPDATE policies SET name = 'challenge_pass.renamed',
       updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
 WHERE name = 'challenge_pass'
   AND NOT EXISTS (SELECT 1 FROM policies
                    WHERE name = 'challenge_pass.renamed');
INSERT INTO audit (action, name, actor, before, after)
SELECT 'rename', 'challenge_pass.renamed', 'migration 010_reserved_names',
       json_object('name', 'challenge_pass'),
       json_object('name', 'challenge_pass.renamed')
 WHERE changes() = 1;
