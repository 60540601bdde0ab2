-- SPDX-License-Identifier: Apache-2.0
-- Audit rows are pruned by age (--audit-retention-days): an index on the
-- time spares the prune a scan of the whole log.
CREATE INDEX audit_at ON audit (at);
