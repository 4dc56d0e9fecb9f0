"""A small JSON Schema reader for the offline stand-in: check a value, or make one that fits.

The stand-in needs JSON Schema in three places: the request checks in ``helpers.standin.validation``
(each parameter has a schema, and a wrong value becomes a 400 worded like the real API's), tool-call
arguments (a tool forced with ``tool_choice``, or one marked ``strict``, gets arguments that satisfy
its ``parameters``), and ``response_format`` of type ``json_schema`` (the reply must conform).

Only the keywords those uses meet are read: ``type`` (a name or a list), ``enum``, ``const``,
``properties``, ``required``, ``additionalProperties``, ``items``, ``minItems``/``maxItems``,
``minLength``/``maxLength``, ``pattern``, ``minimum``/``maximum`` (and the exclusive forms),
``multipleOf``, ``anyOf``/``oneOf``/``allOf`` and local ``$ref`` (``#/$defs/...``,
``#/definitions/...``). Anything else is accepted without a check, the way the JSON Schema
specification treats unknown keywords. ``format`` is not checked (as in most validators), but values
made for a known format have that format.
"""
from __future__ import annotations

import math
import re
import string
from dataclasses import dataclass

from helpers.core import clock
from helpers.core.text import shorten

_KINDS = {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "a boolean",
          "array": "an array", "object": "an object", "null": "null"}
MAX_DEPTH = 64  # deeper schemas or values are refused rather than walked
MAX_MADE = 1_000  # the longest string or array it makes to satisfy minLength / minItems
SHOWN_CHARS = 60  # a value an error message names: its repr, cut to this many characters ("..." at the cut)


@dataclass
class Problem:
    """What is wrong with one value: where (a parameter path), why, and the real API's error code."""

    param: str
    message: str
    code: str


class _CannotMake(ValueError):
    """No value that fits the schema could be made (for example an unguessable ``pattern``)."""


def kind_of(value) -> str:
    """The JSON type name of a Python value: string, integer, number, boolean, array, object or null."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _is_type(value, name: str) -> bool:
    kind = kind_of(value)
    if name == "number":
        return kind in ("integer", "number")
    if name == "integer":
        return kind == "integer" or (kind == "number" and math.isfinite(value) and float(value).is_integer())
    return kind == name


def _same(a, b) -> bool:
    """JSON equality: 1 equals 1.0, but true is not 1; lists and objects compare item by item."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b if not all(kind_of(v) in ("integer", "number") for v in (a, b)) else a == b


def _types(schema: dict) -> list[str] | None:
    kind = schema.get("type")
    if isinstance(kind, str):
        return [kind]
    if isinstance(kind, list) and kind and all(isinstance(k, str) for k in kind):
        return list(kind)
    return None  # absent, or not a type name: no constraint


def resolve(schema, root):
    """Follow a local ``$ref`` (``#``, ``#/$defs/name``, ``#/definitions/name``, any JSON pointer)."""
    seen = 0
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and seen < MAX_DEPTH:
        ref, seen = schema["$ref"], seen + 1
        if not ref.startswith("#"):
            return {}  # a remote reference: nothing the stand-in can read, so no constraint
        target = root
        for part in [p for p in ref[1:].split("/") if p]:
            part = part.replace("~1", "/").replace("~0", "~")
            target = target.get(part) if isinstance(target, dict) else None
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        schema = {**target, **rest} if isinstance(target, dict) else rest
    return schema if isinstance(schema, dict) else {}


def _join(path: str, key) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def _expected(types: list[str]) -> str:
    names = [_KINDS.get(t, t) for t in types] or ["a value of another type"]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


class _TooComplex(Exception):
    """Checking or making a value took more than STEP_LIMIT steps (a schema that branches or recurses a lot)."""


STEP_LIMIT = 20_000


def problem(value, schema, path: str = "", root=None, budget: list | None = None) -> Problem | None:
    """The first thing that keeps ``value`` from conforming to ``schema``, or None when it conforms
    (``budget``: a one-item list of steps left, shared by callers that check many times)."""
    try:
        return _problem(value, schema, path, schema if root is None else root, 0,
                        [STEP_LIMIT] if budget is None else budget)
    except _TooComplex:
        return Problem(path, f"Invalid '{path}': the schema is too complex to check this value against "
                             f"(more than {STEP_LIMIT} steps).", "invalid_value")


def _problem(value, schema, path: str, root, depth: int, budget: list) -> Problem | None:
    budget[0] -= 1
    if budget[0] < 0:
        raise _TooComplex
    if schema is False:
        return Problem(path, f"Unknown parameter: '{path}'.", "unknown_parameter")
    schema = resolve(schema, root)
    if depth > MAX_DEPTH:
        return Problem(path, f"Invalid '{path}': nested more than {MAX_DEPTH} levels deep.", "invalid_value")
    if not isinstance(schema, dict):
        return None
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            found = _branch_problem(value, schema[key], path, root, depth, budget)
            if found:
                return found
    for branch in schema.get("allOf") if isinstance(schema.get("allOf"), list) else []:
        found = _problem(value, branch, path, root, depth + 1, budget)
        if found:
            return found
    types = _types(schema)
    if types is not None and not any(_is_type(value, t) for t in types):
        return Problem(path, f"Invalid type for '{path}': expected {_expected(types)}, but got "
                             f"{_KINDS.get(kind_of(value), kind_of(value))} instead.", "invalid_type")
    if "const" in schema and not _same(value, schema["const"]):
        shown = shorten(repr(value), SHOWN_CHARS, ellipsis="...", flatten=False)
        return Problem(path, f"Invalid value for '{path}': expected {schema['const']!r}, but got {shown}.",
                       "invalid_value")
    if isinstance(schema.get("enum"), list) and not any(_same(value, e) for e in schema["enum"]):
        allowed = ", ".join(repr(e) for e in schema["enum"])
        shown = shorten(repr(value), SHOWN_CHARS, ellipsis="...", flatten=False)
        return Problem(path, f"Invalid value for '{path}': {shown}. Supported values are: {allowed}.",
                       "invalid_value")
    kind = kind_of(value)
    if kind in ("integer", "number") and not isinstance(value, bool):
        return _number_problem(value, schema, path)
    if kind == "string":
        return _string_problem(value, schema, path)
    if kind == "array":
        return _array_problem(value, schema, path, root, depth, budget)
    if kind == "object":
        return _object_problem(value, schema, path, root, depth, budget)
    return None


def _branch_problem(value, branches: list, path: str, root, depth: int, budget: list) -> Problem | None:
    failed = []
    for branch in branches:
        reason = _problem(value, branch, path, root, depth + 1, budget)
        if reason is None:
            return None
        failed.append((_types(resolve(branch, root)), reason))
    kind = kind_of(value)
    for types, reason in failed:  # a branch of the value's own type explains best what is wrong with it
        if types is None or any(_is_type(value, t) for t in types) or (reason.param != path):
            return reason
    types = []
    for branch_types, _ in failed:
        types += [t for t in branch_types or [] if t not in types]
    return Problem(path, f"Invalid type for '{path}': expected {_expected(types)}, but got "
                         f"{_KINDS.get(kind, kind)} instead.", "invalid_type")


def _number_problem(value, schema: dict, path: str) -> Problem | None:
    if not math.isfinite(value):
        return Problem(path, f"Invalid '{path}': expected a finite number, but got {value}.", "invalid_value")
    word = "integer" if isinstance(value, int) else "decimal"
    low, high = schema.get("minimum"), schema.get("maximum")
    if isinstance(low, (int, float)) and value < low:
        return Problem(path, f"Invalid '{path}': {word} below minimum value. Expected a value >= {low}, but got "
                             f"{value} instead.", f"{word}_below_min_value")
    if isinstance(high, (int, float)) and value > high:
        return Problem(path, f"Invalid '{path}': {word} above maximum value. Expected a value <= {high}, but got "
                             f"{value} instead.", f"{word}_above_max_value")
    low, high = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if isinstance(low, (int, float)) and not isinstance(low, bool) and value <= low:
        return Problem(path, f"Invalid '{path}': expected a value > {low}, but got {value} instead.",
                       f"{word}_below_min_value")
    if isinstance(high, (int, float)) and not isinstance(high, bool) and value >= high:
        return Problem(path, f"Invalid '{path}': expected a value < {high}, but got {value} instead.",
                       f"{word}_above_max_value")
    step = schema.get("multipleOf")
    if isinstance(step, (int, float)) and not isinstance(step, bool) and step > 0:
        try:
            whole = math.isclose(value / step, round(value / step))
        except (OverflowError, ValueError):
            whole = False
        if not whole:
            return Problem(path, f"Invalid '{path}': expected a multiple of {step}, but got {value}.",
                           "invalid_value")
    return None


def _string_problem(value: str, schema: dict, path: str) -> Problem | None:
    longest, shortest = schema.get("maxLength"), schema.get("minLength")
    if isinstance(longest, int) and len(value) > longest:
        return Problem(path, f"Invalid '{path}': string too long. Expected a string with maximum length {longest}, "
                             f"but got a string with length {len(value)} instead.", "string_above_max_length")
    if isinstance(shortest, int) and len(value) < shortest:
        return Problem(path, f"Invalid '{path}': string too short. Expected a string with minimum length "
                             f"{shortest}, but got a string with length {len(value)} instead.",
                       "string_below_min_length")
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        try:
            matched = re.search(pattern, value) is not None
        except re.error:
            matched = True  # a pattern Python cannot read is not held against the value
        if not matched:
            return Problem(path, f"Invalid '{path}': string does not match pattern. Expected a string that "
                                 f"matches the pattern '{pattern}'.", "invalid_value")
    return None


def _array_problem(value: list, schema: dict, path: str, root, depth: int, budget: list) -> Problem | None:
    shortest, longest = schema.get("minItems"), schema.get("maxItems")
    if isinstance(shortest, int) and len(value) < shortest:
        if not value:
            return Problem(path, f"Invalid '{path}': empty array. Expected an array with minimum length "
                                 f"{shortest}, but got an empty array instead.", "empty_array")
        return Problem(path, f"Invalid '{path}': array too short. Expected an array with minimum length "
                             f"{shortest}, but got an array with length {len(value)} instead.",
                       "array_below_min_length")
    if isinstance(longest, int) and len(value) > longest:
        return Problem(path, f"Invalid '{path}': array too long. Expected an array with maximum length {longest}, "
                             f"but got an array with length {len(value)} instead.", "array_above_max_length")
    items = schema.get("items")
    if isinstance(items, (dict, bool)):
        for i, item in enumerate(value):
            found = _problem(item, items, _join(path, i), root, depth + 1, budget)
            if found:
                return found
    return None


def _object_problem(value: dict, schema: dict, path: str, root, depth: int, budget: list) -> Problem | None:
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    required = schema.get("required") if isinstance(schema.get("required"), list) else []
    for name in required:
        if isinstance(name, str) and name not in value:
            return Problem(_join(path, name), f"Missing required parameter: '{_join(path, name)}'.",
                           "missing_required_parameter")
    extra = schema.get("additionalProperties", True)
    for name, item in value.items():
        where = _join(path, name)
        if name in properties:
            found = _problem(item, properties[name], where, root, depth + 1, budget)
        elif extra is False:
            found = Problem(where, f"Unknown parameter: '{where}'.", "unknown_parameter")
        elif isinstance(extra, dict):
            found = _problem(item, extra, where, root, depth + 1, budget)
        else:
            found = None
        if found:
            return found
    return None


def conforms(value, schema, root=None) -> bool:
    """True when ``value`` conforms to ``schema`` (as far as the keywords above go)."""
    return problem(value, schema, "", root) is None


# ---------------------------------------------------------------- making a value that fits

class _Maker:
    """Builds one conforming value; ``text`` goes into the first string field without an enum or a
    format, ``hints`` are values by property name (a model's own arguments) used wherever they fit."""

    def __init__(self, root, text: str, hints: dict | None):
        self.root, self.text, self.hints, self.text_used = root, text, hints or {}, False
        self.budget = [STEP_LIMIT]  # steps left for making and checking together

    def fits(self, value, schema) -> bool:
        return problem(value, schema, "", self.root, self.budget) is None

    def make(self, schema, name: str | None = None, depth: int = 0):
        self.budget[0] -= 1
        if self.budget[0] < 0:
            raise _CannotMake(f"the schema takes more than {STEP_LIMIT} steps to fill")
        schema = resolve(schema, self.root)
        if depth > MAX_DEPTH:
            raise _CannotMake("the schema nests too deeply")
        if name is not None and name in self.hints and self.fits(self.hints[name], schema):
            return self.hints[name]
        if "const" in schema:
            return schema["const"]
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return schema["enum"][0]
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list) and schema[key]:
                return self._first_branch(schema, key, name, depth)
        if isinstance(schema.get("allOf"), list) and schema["allOf"]:
            merged = {k: v for k, v in schema.items() if k != "allOf"}
            for branch in schema["allOf"]:
                for key, value in resolve(branch, self.root).items():
                    before = merged.get(key)
                    if key == "properties" and isinstance(value, dict):
                        merged[key] = {**(before if isinstance(before, dict) else {}), **value}
                    elif key == "required" and isinstance(value, list):
                        names = (before if isinstance(before, list) else []) + value
                        merged[key] = list(dict.fromkeys(n for n in names if isinstance(n, str)))
                    else:
                        merged.setdefault(key, value)
            return self.make(merged, name, depth + 1)
        types = _types(schema)
        if types is None:
            types = ["object"] if "properties" in schema else ["array"] if "items" in schema else ["string"]
        kind = next((t for t in types if t != "null"), "null")
        makers = {"object": self._object, "array": self._array, "string": self._string, "integer": self._integer,
                  "number": self._number, "boolean": self._boolean}
        return makers.get(kind, self._null)(schema, name, depth)

    def _first_branch(self, schema, key, name, depth):
        last_error = None
        branches = sorted(schema[key], key=lambda b: resolve(b, self.root).get("type") == "null")
        for branch in branches:
            saved = self.text_used
            try:
                value = self.make(branch, name, depth + 1)
            except _CannotMake as error:
                self.text_used, last_error = saved, error
                continue
            if self.fits(value, {k: v for k, v in schema.items() if k != key}):
                return value
            self.text_used = saved
        raise last_error or _CannotMake("no branch of anyOf/oneOf could be filled")

    def _null(self, schema, name, depth):
        return None

    def _boolean(self, schema, name, depth):
        return bool(schema.get("default")) if isinstance(schema.get("default"), bool) else False

    def _integer(self, schema, name, depth):
        return self._number(schema, name, depth, whole=True)

    def _number(self, schema, name, depth, whole=False):
        low, high = schema.get("minimum"), schema.get("maximum")
        above, below = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
        step = schema.get("multipleOf")
        step = step if isinstance(step, (int, float)) and step > 0 else (1 if whole else None)
        candidates = [schema.get("default"), 0]
        for bound, nudge in ((low, 0), (above, 1), (high, 0), (below, -1)):
            if isinstance(bound, (int, float)) and not isinstance(bound, bool) and math.isfinite(bound):
                unit = step or 1
                try:
                    rounded = math.ceil(bound / unit) if nudge >= 0 and bound is not high else math.floor(bound / unit)
                except (OverflowError, ValueError):
                    rounded = 0
                candidates += [bound + nudge * unit, rounded * unit + nudge * unit]
        if all(isinstance(b, (int, float)) and not isinstance(b, bool) and math.isfinite(b) for b in (low, high)):
            candidates.append((low + high) / 2)
        for candidate in candidates:
            if not _is_type(candidate, "integer" if whole else "number"):
                continue
            if _number_problem(candidate, schema, "") is None:
                return int(candidate) if whole else candidate
        raise _CannotMake("no number the stand-in can make fits the schema's bounds")

    def _string(self, schema, name, depth):
        fmt = schema.get("format")
        candidates = [schema["default"]] if isinstance(schema.get("default"), str) else []
        if isinstance(shortest := schema.get("minLength"), int) and shortest > MAX_MADE:
            raise _CannotMake(f"a string of at least {shortest} characters is more than it makes")
        if isinstance(fmt, str) and fmt in _FORMATS:
            candidates.insert(0, _FORMATS[fmt]())
        elif not self.text_used:  # the first free string field carries the text
            candidates.insert(0, self.text)
            self.text_used = True
        if isinstance(schema.get("pattern"), str):
            candidates.append(_from_pattern(schema["pattern"]) or "")
        for candidate in candidates + ["", "x", "0", "a", "A", "a1", "example"]:
            longest, shortest = schema.get("maxLength"), schema.get("minLength")
            if isinstance(longest, int) and len(candidate) > longest:
                candidate = candidate[:max(longest, 0)]
            if isinstance(shortest, int) and len(candidate) < shortest:
                candidate = candidate + "x" * (shortest - len(candidate))
            if _string_problem(candidate, schema, "") is None:
                return candidate
        raise _CannotMake(f"no string the stand-in can make matches the pattern {schema.get('pattern')!r}")

    def _array(self, schema, name, depth):
        count = schema.get("minItems") if isinstance(schema.get("minItems"), int) else 0
        if count > MAX_MADE:
            raise _CannotMake(f"an array of at least {count} items is more than it makes")
        items = schema.get("items") if isinstance(schema.get("items"), dict) else {}
        return [self.make(items, None, depth + 1) for _ in range(count)]

    def _object(self, schema, name, depth):
        properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        required = [r for r in schema.get("required") if isinstance(r, str)] if isinstance(
            schema.get("required"), list) else []
        value = {}
        for key in list(properties) + [r for r in required if r not in properties]:
            if key in required:
                value[key] = self.make(properties.get(key, {}), key, depth + 1)
        return value


def _from_pattern(pattern: str) -> str | None:
    """The shortest plain string the regular expression's parse tree describes (None when it needs
    something this walk does not follow, such as a backreference); the caller checks it matches."""
    try:
        from re import _constants as c, _parser as parser  # the parser behind the re module
        tree = parser.parse(pattern)
    except Exception:  # an unreadable pattern, or a Python without these modules
        return None
    printable = list(string.ascii_lowercase + string.ascii_uppercase + string.digits + string.punctuation)
    category_texts = {c.CATEGORY_DIGIT: r"\d", c.CATEGORY_WORD: r"\w", c.CATEGORY_SPACE: r"\s",
                      c.CATEGORY_NOT_DIGIT: r"\D", c.CATEGORY_NOT_WORD: r"\W", c.CATEGORY_NOT_SPACE: r"\S"}
    categories = set(category_texts)

    def in_class(ch: str, items) -> bool:
        for op, arg in items:
            if op is c.LITERAL and ch == chr(arg):
                return True
            if op is c.RANGE and arg[0] <= ord(ch) <= arg[1]:
                return True
            if op is c.CATEGORY and arg in categories and re.fullmatch(category_texts[arg], ch):
                return True
        return False

    def one_of(items) -> str | None:
        if items and items[0][0] is c.NEGATE:
            return next((ch for ch in printable if not in_class(ch, items[1:])), None)
        return next((ch for ch in printable + [" "] if in_class(ch, items)), None)

    def walk(nodes, depth=0) -> str | None:
        if depth > 32:
            return None
        out = []
        for op, arg in nodes:
            if op is c.LITERAL:
                out.append(chr(arg))
            elif op is c.NOT_LITERAL:
                out.append("a" if chr(arg) != "a" else "b")
            elif op is c.ANY:
                out.append("a")
            elif op is c.IN:
                piece = one_of(arg)
                if piece is None:
                    return None
                out.append(piece)
            elif op in (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", None)):
                low, _, inner = arg
                piece = walk(inner, depth + 1)
                if piece is None or low > MAX_MADE:
                    return None
                out.append(piece * low)
            elif op is c.SUBPATTERN:
                piece = walk(arg[-1], depth + 1)
                if piece is None:
                    return None
                out.append(piece)
            elif op is c.BRANCH:
                piece = walk(arg[1][0], depth + 1)
                if piece is None:
                    return None
                out.append(piece)
            elif op is c.AT:
                continue
            else:  # backreferences, lookarounds, conditionals: not followed
                return None
        return "".join(out)

    return walk(tree)


_FORMATS = {
    "date-time": lambda: clock.now("UTC").replace(microsecond=0).isoformat().replace("+00:00", "Z"),
    "date": lambda: clock.now("UTC").date().isoformat(),
    "time": lambda: clock.now("UTC").strftime("%H:%M:%S") + "Z",
    "email": lambda: "someone@example.com",
    "uri": lambda: "https://example.com/",
    "uuid": lambda: "00000000-0000-4000-8000-000000000000",
    "duration": lambda: "PT0S",
    "hostname": lambda: "example.com",
    "ipv4": lambda: "192.0.2.1",
    "ipv6": lambda: "2001:db8::1",
}


def make_instance(schema, text: str = "", hints: dict | None = None, root=None):
    """A value conforming to ``schema``: ``text`` in the first plain string field, ``hints`` (values by
    property name) wherever they fit, and otherwise the first enum value, the default, the lowest allowed
    number, ``false``, and only the required properties. Raises ``_CannotMake`` when none can be made."""
    root = schema if root is None else root
    maker = _Maker(root, text, hints)
    value = maker.make(schema)
    found = problem(value, schema, "", root)
    if found is not None:
        raise _CannotMake(found.message)
    return value
