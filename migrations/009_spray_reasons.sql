-- SPDX-License-Identifier: Apache-2.0
-- Issue 36: login.password_spray counts bad_password and
-- second_factor_failed failures, no longer unknown_user ones: ten failure
-- reports an hour of made-up users and one password_fp made every real
-- user of that password be challenged. A database whose row is still the
-- old default, field for field, takes the new one here, audited as an
-- update by this migration; one an operator changed keeps their row (see
-- docs/policies.md, "Changes to the default policies").
UPDATE policies
   SET reasons = '["bad_password","second_factor_failed"]',
       updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
 WHERE name = 'login.password_spray' AND reasons IS NULL
   AND endpoint = 'login' AND key = '["password_fp"]'
   AND algorithm = 'distinct' AND "limit" = 10 AND window_s = 3600
   AND block_s = 0 AND block_growth = 1 AND block_max_s = 0
   AND counts = 'failures' AND fail = 'open' AND mode = 'enforce'
   AND applies_to = 'untrusted' AND action = 'challenge' AND enabled = 1
   AND min_ratio IS NULL AND factor IS NULL AND baseline_s IS NULL
   AND signal IS NULL;
INSERT INTO audit (action, name, actor, before, after)
SELECT 'update', 'login.password_spray', 'migration 009_spray_reasons',
       '{"action":"challenge","algorithm":"distinct","applies_to":"untrusted","block_growth":1,"block_max_s":0,"block_s":0,"counts":"failures","enabled":true,"endpoint":"login","fail":"open","key":["password_fp"],"limit":10,"mode":"enforce","name":"login.password_spray","window_s":3600}',
       '{"action":"challenge","algorithm":"distinct","applies_to":"untrusted","block_growth":1,"block_max_s":0,"block_s":0,"counts":"failures","enabled":true,"endpoint":"login","fail":"open","key":["password_fp"],"limit":10,"mode":"enforce","name":"login.password_spray","reasons":["bad_password","second_factor_failed"],"window_s":3600}'
 WHERE changes() = 1;
