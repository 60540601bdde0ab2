#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The heads of libphonenumber's national_prefix_for_parsing that are not
a plain trunk prefix: the carrier codes and the digits a transform rule
rewrites, which libphonenumber reads as part of no number (Brazil's
"90", Australia's "1831", Argentina's area code and mobile "15"), and
the local numbers a transform rule completes with an area code. Used by
gen_country_codes.py, for the rules that refuse such spellings and for
the check that none is accepted as a phone of its own.
"""
import re
import sys

from digit_patterns import DigitNFA


def group_ends(pattern):
    """{group number: index just after its closing parenthesis}."""
    ends, stack, k, i = {}, [], 0, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            i = pattern.index("]", i + 1) + 1
            continue
        if c == "(":
            if pattern.startswith("(?", i):
                stack.append(None)
            else:
                k += 1
                stack.append(k)
        elif c == ")":
            gid = stack.pop()
            if gid is not None:
                ends[gid] = i + 1
        i += 1
    return ends


def carrier_forms(md):
    """The spellings libphonenumber rewrites through a capturing group or
    a transform rule of this region's national_prefix_for_parsing (the
    forms trunk_prefixes leaves out), as (heads, lit): heads, every digit
    string that pattern takes before the rest of the number, and lit, what
    a transform rule puts back in front of a kept tail ("" for none). A
    group that ends the pattern and that the rule keeps ("20\1" of
    Madagascar's "([24-9]\d{6})$", "\2" of Brazil's carrier and number) is
    the rest of the number, not part of a head; heads then holds "" when
    the pattern can take the whole number (a local number completed with
    an area code). None when the pattern has neither group nor rule."""
    npfp = md.national_prefix_for_parsing
    rule = md.national_prefix_transform_rule
    if not npfp or (not rule and DigitNFA(npfp).groups == 0):
        return None
    tail, lit = (), ""
    m = re.fullmatch(r"(\d*)\\(\d)", rule or "")
    if m:
        k = int(m.group(2))
        if all(c in ")?$" for c in npfp[group_ends(npfp)[k]:]):
            tail, lit = (k,), m.group(1)
    heads = DigitNFA(npfp, tail).finite_language(longest=7)
    if heads is None:
        sys.exit("+%s: national_prefix_for_parsing %s takes more than 7 "
                 "digits before the number: not modelled" % (md.id, npfp))
    return heads, lit


def spelling_forms(md, plain):
    """(head, put back) for every way md's metadata lets a number be
    written after its calling code that libphonenumber reads as another
    number: plain, its trunk prefixes, then the heads of carrier_forms.
    The head is written before the number, put back is what libphonenumber
    writes in the head's place (the number begins with it: Argentina's
    "11 15" is its "9 11")."""
    forms = [(p, "") for p in plain]
    carried = carrier_forms(md)
    if carried is None:
        return forms
    heads, lit = carried
    npfp = md.national_prefix_for_parsing
    rule = md.national_prefix_transform_rule
    for h in heads:
        if h in plain:
            continue
        m = re.fullmatch(npfp, h)
        if m is None:
            forms.append((h, lit))  # a tail follows: the number's rest
        elif rule and m.lastindex and m.group(m.lastindex) is not None:
            forms.append((h, m.expand(rule)))
        elif h:
            forms.append((h, ""))
    return forms
