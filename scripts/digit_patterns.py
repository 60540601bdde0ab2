#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Questions about libphonenumber's number patterns that a regex cannot
answer by matching: "can a number of this length begin with these
digits?", "which strings does this national prefix pattern match?".

libphonenumber's patterns are regular expressions over digits made of
literals, classes, alternation, groups and bounded repetition. DigitNFA
turns one (through Python's own regex parser) into a nondeterministic
automaton over the ten digits, which answers such questions exactly, for
every number at once, instead of for the numbers one happens to try.
Used by gen_country_codes.py; it refuses, with ValueError, any construct
it does not model (an unbounded repetition, a look-around), so it never
answers for a pattern it has not understood.
"""
import random
import re
from re import _constants as C
from re import _parser

DIGITS = "0123456789"


class DigitNFA:
    """The automaton of one pattern, anchored at both ends."""

    def __init__(self, pattern, empty_groups=()):
        """empty_groups: the numbers of capturing groups to read as
        matching nothing (the tail of a national_prefix_for_parsing that a
        transform rule keeps, when only what comes before it is wanted)."""
        self.empty_groups = frozenset(empty_groups)
        self.eps = []  # state -> list of states reached without a digit
        self.moves = []  # state -> list of (frozenset of digits, state)
        self.start = self._state()
        self.groups = 0
        self.accept = self._seq(_parser.parse(pattern), self.start)
        self._lengths = {}

    def _state(self):
        self.eps.append([])
        self.moves.append([])
        return len(self.eps) - 1

    def _move(self, s, digits):
        e = self._state()
        self.moves[s].append((frozenset(digits) & frozenset(DIGITS), e))
        return e

    def _class(self, items):
        out = set()
        for op, av in items:
            if op == C.LITERAL:
                out.add(chr(av))
            elif op == C.RANGE:
                out.update(chr(c) for c in range(av[0], av[1] + 1))
            elif op == C.CATEGORY and av == C.CATEGORY_DIGIT:
                out.update(DIGITS)
            else:
                raise ValueError("class item %r not modelled" % ((op, av),))
        return out

    def _seq(self, items, s):
        for op, av in items:
            s = self._node(op, av, s)
        return s

    def _node(self, op, av, s):
        if op == C.LITERAL:
            return self._move(s, chr(av))
        if op == C.IN:
            return self._move(s, self._class(av))
        if op == C.SUBPATTERN:
            if av[0] is not None:
                self.groups += 1
                if av[0] in self.empty_groups:
                    return s
            return self._seq(av[3], s)
        if op == C.BRANCH:
            end = self._state()
            for alt in av[1]:
                a = self._state()
                self.eps[s].append(a)
                self.eps[self._seq(alt, a)].append(end)
            return end
        if op in (C.MAX_REPEAT, C.MIN_REPEAT):
            lo, hi, sub = av
            if hi == C.MAXREPEAT:
                raise ValueError("unbounded repetition not modelled")
            for _ in range(lo):
                s = self._seq(sub, s)
            end = self._state()
            self.eps[s].append(end)
            for _ in range(hi - lo):
                s = self._seq(sub, s)
                self.eps[s].append(end)
            return end
        if op == C.AT and av == C.AT_END:
            return s
        raise ValueError("%r not modelled" % ((op, av),))

    def _closure(self, states):
        todo = list(states)
        seen = set(states)
        while todo:
            for t in self.eps[todo.pop()]:
                if t not in seen:
                    seen.add(t)
                    todo.append(t)
        return frozenset(seen)

    def _step(self, states, digits):
        return self._closure({t for s in states for cs, t in self.moves[s]
                              if cs & digits})

    def after(self, prefix):
        """The states reached after reading prefix."""
        states = self._closure({self.start})
        for c in prefix:
            states = self._step(states, frozenset(c))
        return states

    def lengths(self, states, most=20):
        """How many more digits (0 to most) can take states to a match."""
        key = (states, most)
        if key not in self._lengths:
            out = set()
            for k in range(most + 1):
                if not states:
                    break
                if self.accept in states:
                    out.add(k)
                states = self._step(states, frozenset(DIGITS))
            self._lengths[key] = frozenset(out)
        return self._lengths[key]

    def can_start(self, prefix, length):
        """Whether some string of length digits that begins with prefix
        matches."""
        rest = length - len(prefix)
        return rest >= 0 and rest in self.lengths(self.after(prefix))

    def matches(self, text):
        return self.accept in self.after(text)

    def sample(self, prefix, length, rng):
        """A random matching string of length digits that begins with
        prefix, or None if there is none."""
        if not self.can_start(prefix, length):
            return None
        out = prefix
        states = self.after(prefix)
        while len(out) < length:
            need = length - len(out) - 1
            ok = [d for d in DIGITS
                  if need in self.lengths(self._step(states, frozenset(d)))]
            d = rng.choice(ok)
            out += d
            states = self._step(states, frozenset(d))
        return out

    def finite_language(self, longest=4):
        """Every string the pattern matches, if they are all at most
        longest digits long; None otherwise."""
        lengths = self.lengths(self.after(""), 40)
        if not lengths or max(lengths) > longest:
            return None
        out = []

        def walk(states, text):
            if self.accept in states:
                out.append(text)
            if len(text) < longest:
                for d in DIGITS:
                    nxt = self._step(states, frozenset(d))
                    if nxt:
                        walk(nxt, text + d)

        walk(self.after(""), "")
        return out


def self_test():
    """The automaton against Python's re on strings it generates."""
    rng = random.Random(1)
    for pattern in [r"[1-357-9]\d{9}|[18]\d{8}|8\d{6}", r"0(?:[12]|4[45])|1",
                    r"8\d{13}|[347-9]\d{9}", r"(?:00|7)0\d{8}"]:
        nfa = DigitNFA(pattern)
        rx = re.compile("(?:%s)$" % pattern)
        for length in range(1, 16):
            for _ in range(20):
                s = nfa.sample("", length, rng)
                assert s is None or rx.match(s), (pattern, s)
                t = "".join(rng.choice(DIGITS) for _ in range(length))
                assert bool(rx.match(t)) == nfa.matches(t), (pattern, t)
    assert sorted(DigitNFA(r"0(?:[12]|4[45])|1").finite_language()) == [
        "01", "02", "044", "045", "1"]
    assert DigitNFA(r"0\d{6}").finite_language() is None


if __name__ == "__main__":
    self_test()
    print("digit_patterns: self-test passed")
