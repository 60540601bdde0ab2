# SPDX-License-Identifier: Apache-2.0
"""A small validator of OCSF events against the schema's own definitions.

It reads the OCSF schema's source files (tests/ocsf/schema/: the
dictionary, the classes abuseguard writes and what they extend, the
objects they use, the profiles; tests/ocsf/README.md says which version)
and resolves a class as the schema's compiler does: its `extends` chain up
to base_event, each level's attributes over its parent's, the profiles its
`$include` names (their attributes count only when the event lists the
profile in metadata.profiles), each attribute's type and enum from the
dictionary unless the class overrides them. An event is then checked:

- its class_uid is a class of the schema; category_uid and type_uid agree
  with it (type_uid = class_uid * 100 + activity_id);
- every attribute the class or an object requires is present;
- no attribute the class or object does not define (after the profiles);
- every value has its type: integer_t, long_t, timestamp_t, float_t,
  boolean_t, string_t and the string types (with their regex), objects
  recursively, arrays where the dictionary says is_array;
- every *_id attribute with an enum holds one of its values, and its
  caption, where the event gives it (severity for severity_id,
  activity_name for activity_id, ...), is that value's (99, Other, may
  be named anything);
- class_name and category_name are the class's and category's captions;
- metadata.profiles names only profiles the class includes;
- the class's `at_least_one` / `just_one` constraints hold.

Objects' own `at_least_one` / `just_one` constraints are reported apart,
as gaps: abuseguard's src_endpoint holds a country and an AS number and
never an address, which OCSF's network_endpoint asks one of (ip, uid,
name, ...); docs/decisions/ocsf-events.md says why it stays that way, and
the tests assert that this is the only gap.

Usage: Schema(path).check(event) -> (errors, gaps), each a list of
"path: what" strings; errors empty means the event is valid.
"""
import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SCHEMA = os.path.join(HERE, "..", "ocsf", "schema")

INTEGER_TYPES = {"integer_t", "long_t", "port_t", "timestamp_t"}


class Schema:
    def __init__(self, path=DEFAULT_SCHEMA):
        self.path = path
        d = self._load("dictionary.json")
        self.dictionary = d["attributes"]
        self.types = d["types"]["attributes"]
        cats = self._load("categories.json")["attributes"]
        self.categories = {k: v["uid"] for k, v in cats.items()}
        self.category_captions = {v["uid"]: v["caption"]
                                  for v in cats.values()}
        self.version = self._load("version.json")["version"]
        self.events = {}
        for root, _, files in os.walk(os.path.join(path, "events")):
            for f in files:
                j = self._load(os.path.relpath(os.path.join(root, f), path))
                self.events[j["name"]] = j
        self.objects = {}
        for f in os.listdir(os.path.join(path, "objects")):
            j = self._load(os.path.join("objects", f))
            self.objects[j["name"]] = j
        self.classes = {}
        for name, j in self.events.items():
            if "uid" not in j:
                continue
            cat = self._category(j)
            if cat is None:
                continue
            self.classes[self.categories[cat] * 1000 + j["uid"]] = name

    def _load(self, rel):
        with open(os.path.join(self.path, rel), encoding="utf-8") as f:
            return json.load(f)

    def _category(self, record):
        while record is not None:
            if record.get("category") and record["category"] != "other":
                return record["category"]
            parent = record.get("extends")
            record = self.events.get(parent) if parent else None
        return None

    def _resolve(self, record, table):
        """{name: (definition, profile or None)}, constraints of record
        resolved through its extends chain (the nearest level's win)."""
        chain = []
        while record is not None:
            chain.append(record)
            parent = record.get("extends")
            if parent and parent not in table:
                raise KeyError("%s extends %s, which is not in %s"
                               % (record["name"], parent, self.path))
            record = table.get(parent) if parent else None
        attrs, constraints = {}, {}
        for level in reversed(chain):
            for key, spec in level.get("attributes", {}).items():
                if key == "$include":
                    for inc in spec:
                        prof = self._load(inc)
                        for pk, pv in prof["attributes"].items():
                            base = attrs.get(pk, ({}, None))[0]
                            attrs[pk] = ({**base, **pv}, prof["name"])
                    continue
                base, prof = attrs.get(key, ({}, None))
                attrs[key] = ({**base, **(spec or {})}, prof)
            if level.get("constraints"):
                constraints = level["constraints"]
        return attrs, constraints

    def _attribute(self, name, spec):
        """The attribute's type, is_array and enum: the dictionary's,
        overridden by the class's or object's."""
        d = self.dictionary.get(name)
        if d is None:
            raise KeyError("%s is not in the dictionary" % name)
        # A class's enum adds to the dictionary's (its 0 Unknown and 99
        # Other stay), as the schema's compiler merges them.
        enum = {**(d.get("enum") or {}), **(spec.get("enum") or {})}
        return (spec.get("type") or d["type"], d.get("is_array", False),
                enum or None)

    def check(self, event):
        errors, gaps = [], []
        if not isinstance(event, dict):
            return ["event: not an object"], gaps
        uid = event.get("class_uid")
        name = self.classes.get(uid) if isinstance(uid, int) else None
        if name is None:
            return ["class_uid: %r is no class of OCSF %s here"
                    % (uid, self.version)], gaps
        cls = self.events[name]
        cat = self.categories[self._category(cls)]
        if event.get("category_uid") != cat:
            errors.append("category_uid: %r, the class's is %d"
                          % (event.get("category_uid"), cat))
        activity = event.get("activity_id")
        if isinstance(activity, int) and \
                event.get("type_uid") != uid * 100 + activity:
            errors.append("type_uid: %r, not class_uid * 100 + activity_id "
                          "(%d)" % (event.get("type_uid"),
                                    uid * 100 + activity))
        if event.get("class_name", cls["caption"]) != cls["caption"]:
            errors.append("class_name: %r, the class's is %r"
                          % (event.get("class_name"), cls["caption"]))
        if event.get("category_name", self.category_captions[cat]) != \
                self.category_captions[cat]:
            errors.append("category_name: %r, the category's is %r"
                          % (event.get("category_name"),
                             self.category_captions[cat]))
        meta = event.get("metadata")
        profiles = set(meta.get("profiles") or []) \
            if isinstance(meta, dict) else set()
        attrs, constraints = self._resolve(cls, self.events)
        included = {p for _, p in attrs.values() if p}
        for p in sorted(profiles - included):
            errors.append("metadata.profiles: %r is no profile of the class"
                          % p)
        self._check_record(event, attrs, profiles, "", errors, gaps)
        self._constraints(event, constraints, "", errors)
        return errors, gaps

    def _check_record(self, value, attrs, profiles, path, errors, gaps):
        live = {k: v for k, v in attrs.items()
                if v[1] is None or v[1] in profiles}
        for key, (spec, _) in live.items():
            if spec.get("requirement") == "required" and key not in value:
                errors.append("%s%s: required, missing" % (path, key))
        for key, v in value.items():
            where = path + key
            if key not in live:
                why = " (profile %s not in metadata.profiles)" % attrs[key][1] \
                    if key in attrs else ""
                errors.append("%s: not an attribute here%s" % (where, why))
                continue
            typ, is_array, enum = self._attribute(key, live[key][0])
            items = v if is_array else [v]
            if is_array and not isinstance(v, list):
                errors.append("%s: must be an array of %s" % (where, typ))
                continue
            for i, item in enumerate(items):
                at = "%s[%d]" % (where, i) if is_array else where
                self._check_value(item, typ, profiles, at, errors, gaps)
                if enum and key.endswith("_id") and isinstance(item, int) \
                        and str(item) not in enum:
                    errors.append("%s: %r is not one of its enum's %s"
                                  % (at, item, sorted(enum, key=int)))
                elif enum and key.endswith("_id") and not is_array and \
                        isinstance(item, int) and item != 99:
                    self._check_caption(value, key, enum[str(item)], path,
                                        errors)

    def _check_value(self, v, typ, profiles, path, errors, gaps):
        if typ in self.objects:
            if not isinstance(v, dict):
                errors.append("%s: must be an object (%s)" % (path, typ))
                return
            if typ == "object":  # the generic object: anything goes
                return
            attrs, constraints = self._resolve(self.objects[typ],
                                               self.objects)
            self._check_record(v, attrs, profiles, path + ".", errors, gaps)
            self._constraints(v, constraints, path, gaps)
            return
        if typ == "json_t":
            return
        if typ == "object":
            if not isinstance(v, dict):
                errors.append("%s: must be an object" % path)
            return
        base = typ
        t = self.types.get(typ)
        if t is None:
            errors.append("%s: type %s is neither a type nor an object "
                          "vendored here" % (path, typ))
            return
        base = t.get("type", typ)
        if typ in INTEGER_TYPES or base in INTEGER_TYPES:
            ok = isinstance(v, int) and not isinstance(v, bool)
        elif typ == "float_t":
            ok = isinstance(v, (int, float)) and not isinstance(v, bool)
        elif typ == "boolean_t":
            ok = isinstance(v, bool)
        else:
            ok = isinstance(v, str)
            if ok and t.get("regex") and not re.fullmatch(t["regex"], v):
                errors.append("%s: %r does not match %s's pattern"
                              % (path, v, typ))
        if not ok:
            errors.append("%s: %r is not a %s" % (path, v, typ))

    @staticmethod
    def _check_caption(record, key, entry, path, errors):
        """The caption beside an id (severity_id: severity,
        activity_id: activity_name) must be the enum value's."""
        for name in (key[:-3], key[:-3] + "_name"):
            if name in record and record[name] != entry["caption"]:
                errors.append("%s%s: %r, but %s's caption is %r"
                              % (path, name, record[name], key,
                                 entry["caption"]))

    @staticmethod
    def _constraints(value, constraints, path, out):
        where = path or "event"
        for kind, names in constraints.items():
            have = [n for n in names if n in value]
            if kind == "at_least_one" and not have:
                out.append("%s: needs at least one of %s" % (where, names))
            if kind == "just_one" and len(have) != 1:
                out.append("%s: needs exactly one of %s" % (where, names))
