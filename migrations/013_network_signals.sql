-- SPDX-License-Identifier: Apache-2.0
-- Issue 39: the signals the service computes from the address, and what
-- a signal policy of them trips on: "lists" (ip_listed: the --ip-list
-- names, a JSON list) and "countries" (ip_country: ISO 3166-1 alpha-2
-- codes, a JSON list). NULL in every other policy's row: the record has
-- each field only for its signal, and reads a NULL as absent. As in
-- 008_signal, no CHECK: the validator refuses what is not one.
ALTER TABLE policies ADD COLUMN lists TEXT;
ALTER TABLE policies ADD COLUMN countries TEXT;
