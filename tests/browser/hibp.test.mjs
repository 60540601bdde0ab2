// SPDX-License-Identifier: Apache-2.0
// The range API with a real HIBP client: the npm package hibp, pointed at
// the service by its baseUrl option, as an application would point it at
// its own abuseguard. tests/integration/test_pwned_range.py starts Redis
// and the service with a SHA-1 and an NTLM corpus it made, and runs this
// with node --test and:
//   AG_RANGE_BASE    the service, e.g. http://127.0.0.1:8080
//   AG_RANGE_EXPECT  a JSON file of what the corpora hold:
//     {"sha1": {PREFIX: {SUFFIX: count}}, "ntlm": {...},
//      "passwords": {password: count}, "absent": [password, ...]}
import assert from 'node:assert/strict';
import fs from 'node:fs';
import {describe, it} from 'node:test';

import {pwnedPassword, pwnedPasswordRange} from 'hibp';

const baseUrl = process.env.AG_RANGE_BASE;
const expectPath = process.env.AG_RANGE_EXPECT;
assert.ok(baseUrl && expectPath, 'AG_RANGE_BASE and AG_RANGE_EXPECT are required');
const expected = JSON.parse(fs.readFileSync(expectPath, 'utf8'));
const timeoutMs = 30000;

// The real lines of a padded answer, and its padding, apart.
function split(range) {
  const real = {};
  const padding = {};
  for (const [suffix, count] of Object.entries(range)) {
    (count === 0 ? padding : real)[suffix] = count;
  }
  return {real, padding};
}

for (const mode of ['sha1', 'ntlm']) {
  const hexLength = mode === 'sha1' ? 35 : 27;
  describe(`pwnedPasswordRange, ${mode}`, () => {
    for (const [prefix, want] of Object.entries(expected[mode])) {
      it(`reads range ${prefix} as the corpus holds it`, async () => {
        const got = await pwnedPasswordRange(prefix, {baseUrl, mode, timeoutMs});
        assert.deepEqual(got, want);
      });
      it(`reads range ${prefix.toLowerCase()} the same`, async () => {
        const got = await pwnedPasswordRange(prefix.toLowerCase(),
                                             {baseUrl, mode, timeoutMs});
        assert.deepEqual(got, want);
      });
      it(`reads range ${prefix} padded: the same lines and 800 more at least`,
         async () => {
           const got = await pwnedPasswordRange(
               prefix, {baseUrl, mode, addPadding: true, timeoutMs});
           const {real, padding} = split(got);
           assert.deepEqual(real, want);
           const n = Object.keys(got).length;
           assert.ok(n >= 810 && n <= 999, `${n} lines`);
           for (const suffix of Object.keys(padding)) {
             assert.match(suffix, new RegExp(`^[0-9A-F]{${hexLength}}$`));
             assert.equal(want[suffix], undefined);
           }
         });
    }
  });
}

describe('pwnedPassword', () => {
  for (const [password, count] of Object.entries(expected.passwords)) {
    it(`counts a breached password (${count})`, async () => {
      assert.equal(await pwnedPassword(password, {baseUrl, timeoutMs}), count);
      assert.equal(
          await pwnedPassword(password, {baseUrl, addPadding: true, timeoutMs}),
          count);
    });
  }
  for (const password of expected.absent) {
    it('counts 0 for a password the corpus does not hold', async () => {
      assert.equal(await pwnedPassword(password, {baseUrl, timeoutMs}), 0);
      assert.equal(
          await pwnedPassword(password, {baseUrl, addPadding: true, timeoutMs}),
          0);
    });
  }
});

describe('refusals', () => {
  it('rejects a prefix of 4 digits with the 400 the service sends', async () => {
    await assert.rejects(pwnedPasswordRange('21BD', {baseUrl, timeoutMs}),
                         /prefix must be 5 hexadecimal digits/);
  });
});
