"""Kubernetes JSONPath templates (`{ .jobStatus.jobID }`), as state-preservation rules use them:
validated by admission, evaluated by the taint manager and application failover.

Why a parser of our own: the template is the policy author's, but the object it runs over is the
status a member cluster reports, and it runs on the taint manager's and the eviction service's
event loops. jsonpath-ng's extended grammar accepts regular expression filters (`=~`), `sub()`
and other functions, arithmetic: a pattern that backtracks on a string the member controls
stalls the loop that fails workloads over. Karmada evaluates these
templates with Kubernetes' own JSONPath (k8s.io/client-go/util/jsonpath), which has none of
those, so admission accepts that grammar's subset a preserved label can use, and evaluation is
a walk with a budget: no regular expression anywhere, iterative, a bounded count of nodes
visited and a bounded length of printed value.

The grammar (one expression in braces, surrounding whitespace allowed):

    template  := '{' path '}'
    path      := '$'? step*           (at least '$' or '.' or one step)
    step      := '.' name | '.' '*' | '..' (name | '*' | bracket) | bracket
    bracket   := '[' ( '*'
                     | quoted (',' quoted)*         ['a.b'], ['a','b']
                     | int (',' int)*               [0], [-1], [0,2]
                     | int? ':' int? (':' int?)?    [1:3], [::2]
                     | '?(' filter ')' ) ']'
    filter    := '@' relative (op literal)?         [?(@.type=="Ready")], [?(@.ready)]
    relative  := ('.' name | '[' (quoted | int) ']')*
    op        := '==' | '!=' | '<' | '>' | '<=' | '>='
    literal   := quoted | number | 'true' | 'false'

Names are letters, digits and `-_/:#%` (a backslash escapes any other character, `\\.`);
whitespace is allowed inside brackets and filters. Not supported, each refused with its reason:
`=~` (regular expressions), function calls (`sub(`, `len(`), jsonpath-ng's backquoted
extensions, arithmetic, `&&`/`||`, `{range}`/`{end}` and several expressions (a preserved label
is one value; Karmada's statePreservation documents single paths).

Evaluation follows client-go where it matters for a label: strings print bare, other values as
JSON, several matches joined by spaces; `..` visits every non-empty map or list, itself first,
map keys in sorted order (as Go's). Where client-go reports an error (a missing key, an index
out of range, a filter over a map) nothing matches: Flotilla's extraction then preserves no
label for the rule.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

# Longer templates are refused at admission: no single-value path needs more, and parsing and
# the union steps' fan-out stay small.
MAX_TEMPLATE_CHARS = 1024
# Nodes one evaluation may visit, so a member's status costs an event loop at most tens of
# milliseconds whatever its size: a recursive descent (`..`, about two visits a value) over a
# status of some 50 000 values and a step after it fit, a hundred times what a workload's status
# holds. A larger status, or a template whose unions or repeated descents multiply past it,
# extracts nothing.
MAX_VISITS = 100_000
# Characters of an extracted value kept. Anything longer than a label value's 63 is refused by
# the executor anyway (flotilla.rules.preserved_labels), cut or not; the binding that stores the
# value keeps no more of what a member reported than this.
MAX_VALUE_CHARS = 256
# Digits of an index or slice bound (JSON arrays are far shorter); a number literal may have
# twice as many, with its fraction.
_MAX_DIGITS = 18

_QUOTES = "'\""
_SPACE = " \t\r\n"
_NAME_EXTRA = "-_/:#%"
_OPERATORS = ("==", "!=", "<=", ">=", "<", ">")
REGEX_REFUSED = "regular expressions (=~) are not supported: Kubernetes' JSONPath has none"
EXTENSION_REFUSED = "jsonpath-ng extensions (`...`) are not supported: Kubernetes' JSONPath has none"
SINGLE_EXPRESSION = "must be a single JSONPath expression in braces, like {.status.jobID}"


class JsonPathError(ValueError):
    """A template outside the grammar; the message is the reason admission shows."""


class TooCostly(Exception):
    """An evaluation visited more than its budget of nodes."""


# -- the parsed path --------------------------------------------------------------------------


@dataclass(frozen=True)
class Child:
    """`.name`, `['name']` or `['a','b']`: those keys of a map."""

    names: tuple[str, ...]


@dataclass(frozen=True)
class AnyChild:
    """`.*` or `[*]`: every value of a map, every item of a list."""


@dataclass(frozen=True)
class Indices:
    """`[0]`, `[-1]`, `[0,2]`: those items of a list (negative counts from the end)."""

    indices: tuple[int, ...]


@dataclass(frozen=True)
class Slice:
    """`[start:stop:step]` of a list, Python's (and Go's client-go) clamping."""

    start: int | None
    stop: int | None
    step: int | None


@dataclass(frozen=True)
class Descend:
    """`..`: the node and every non-empty map or list below it, for the next step."""


Literal = str | int | float | bool


@dataclass(frozen=True)
class Filter:
    """`[?(@.path op literal)]`, or `[?(@.path)]` (the path exists): the matching items of a list."""

    path: tuple[Child | Indices, ...]
    op: str | None
    literal: Literal | None


Step = Child | AnyChild | Indices | Slice | Descend | Filter
Path = tuple[Step, ...]


# -- admission --------------------------------------------------------------------------------


def jsonpath_template_problem(template: str) -> str | None:
    """Why the template cannot be used to extract a value, or None when it can.

    Karmada runs the template through Kubernetes' JSONPath printer, where text outside braces
    is printed literally; a preserved label is one value, so a template must be exactly one
    `{...}` expression, in the grammar of this module's docstring.
    """
    try:
        parse(template)
    except JsonPathError as e:
        return str(e)
    return None


@functools.lru_cache(maxsize=512)
def parse(template: str) -> Path:
    """The template's path; raises JsonPathError with the reason it is refused.

    Cached: the same few templates are parsed on every eviction (a refusal is not cached, and
    costs at most MAX_TEMPLATE_CHARS of scanning)."""
    if len(template) > MAX_TEMPLATE_CHARS:
        raise JsonPathError(f"must be no more than {MAX_TEMPLATE_CHARS} characters")
    text = template.strip()
    problem = _brace_problem(text)
    if problem:
        raise JsonPathError(problem)
    if not (text.startswith("{") and text.endswith("}")):
        raise JsonPathError(SINGLE_EXPRESSION)
    inner = text[1:-1]
    expression = inner.strip()
    if not expression:
        raise JsonPathError("empty JSONPath expression")
    _refuse_extensions(expression)
    word = expression.split(None, 1)[0]
    if word in ("range", "end"):
        raise JsonPathError(f"{{{word}}} is not supported: a preserved label is one value; {SINGLE_EXPRESSION}")
    if expression[0] not in ".[$":
        raise JsonPathError("the expression must start with '.', '[' or '$', like {.status.jobID}")
    offset = template.index("{") + 1 + (len(inner) - len(inner.lstrip()))
    return _Parser(expression, offset).path()


def _brace_problem(text: str) -> str | None:
    depth = 0
    actions = 0
    quote = ""
    escaped = False
    for c in text:
        if quote:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == quote:
                quote = ""
        elif c in _QUOTES and depth:
            quote = c
        elif c == "{":
            depth += 1
            actions += 1
            if depth > 1:
                return "unbalanced braces: '{' inside an expression"
        elif c == "}":
            depth -= 1
            if depth < 0:
                return "unbalanced braces: '}' without '{'"
    if quote:
        return "unterminated quote"
    if depth:
        return "unbalanced braces: '{' without '}'"
    if actions > 1:
        return SINGLE_EXPRESSION
    return None


def _refuse_extensions(expression: str) -> None:
    """The reasons worth naming before any syntax error: what jsonpath-ng accepted and
    Kubernetes' grammar has not (outside quoted strings, where anything goes)."""
    quote = ""
    escaped = False
    word = ""
    for i, c in enumerate(expression):
        if quote:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == quote:
                quote = ""
            continue
        if c in _QUOTES:
            quote = c
        elif c == "=" and expression[i + 1:i + 2] == "~":
            raise JsonPathError(REGEX_REFUSED)
        elif c == "`":
            raise JsonPathError(EXTENSION_REFUSED)
        elif c in "&|":
            raise JsonPathError("logical operators (&&, ||) are not supported: one comparison per filter")
        elif c == "(" and word and word != "?":
            raise JsonPathError(f"function calls ({word}(...)) are not supported: Kubernetes' JSONPath has none")
        word = word + c if (c.isalnum() or c == "_") else ("?" if c == "?" else "")


class _Parser:
    """Recursive descent over one expression; `offset` places its errors in the template."""

    def __init__(self, text: str, offset: int) -> None:
        self.text = text
        self.pos = 0
        self.offset = offset

    def error(self, reason: str) -> JsonPathError:
        return JsonPathError(f"invalid JSONPath expression: {reason} at character {self.offset + self.pos + 1}")

    def peek(self, n: int = 1) -> str:
        return self.text[self.pos:self.pos + n]

    def spaces(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in _SPACE:
            self.pos += 1

    def expect(self, token: str, what: str) -> None:
        self.spaces()
        if self.peek(len(token)) != token:
            raise self.error(f"expected {what}, found {self._found()}")
        self.pos += len(token)

    def _found(self) -> str:
        return repr(self.text[self.pos]) if self.pos < len(self.text) else "the end"

    def path(self) -> Path:
        steps: list[Step] = []
        rooted = self.peek() == "$"
        if rooted:
            self.pos += 1
        if self.text[self.pos:] == ".":  # `{.}`: the object itself, as in kubectl
            return ()
        while self.pos < len(self.text):
            c = self.text[self.pos]
            if c == ".":
                if self.peek(2) == "..":
                    self.pos += 2
                    steps.append(Descend())
                    if self.peek() == "[":
                        steps.append(self.bracket())
                    else:
                        steps.append(self.dotted("'..'"))
                else:
                    self.pos += 1
                    steps.append(self.dotted("'.'"))
            elif c == "[":
                steps.append(self.bracket())
            elif c in _SPACE:
                raise self.error("unexpected whitespace inside a path")
            elif c in "+*/-":
                raise self.error(f"unexpected {c!r} (arithmetic is not supported)")
            else:
                raise self.error(f"unexpected {c!r}")
        if not steps and not rooted:
            raise self.error("expected a path, like .status.jobID")
        return tuple(steps)

    def dotted(self, after: str) -> Child | AnyChild:
        if self.peek() == "*":
            self.pos += 1
            return AnyChild()
        name = self.name()
        if not name:
            raise self.error(f"expected a field name after {after}, found {self._found()}")
        return Child((name,))

    def name(self) -> str:
        chars: list[str] = []
        while self.pos < len(self.text):
            c = self.text[self.pos]
            if c == "\\" and self.pos + 1 < len(self.text) and self.text[self.pos + 1] not in _SPACE:
                chars.append(self.text[self.pos + 1])
                self.pos += 2
            elif c.isalnum() or c in _NAME_EXTRA:
                chars.append(c)
                self.pos += 1
            else:
                break
        return "".join(chars)

    def bracket(self) -> Step:
        self.pos += 1  # '['
        self.spaces()
        c = self.peek()
        step: Step
        if c == "*":
            self.pos += 1
            step = AnyChild()
        elif c == "?":
            step = self.filter()
        elif c and c in _QUOTES:
            names = [self.quoted()]
            while self.more(","):
                self.spaces()
                if not (self.peek() and self.peek() in _QUOTES):
                    raise self.error(f"expected a quoted key, found {self._found()}")
                names.append(self.quoted())
            step = Child(tuple(names))
        else:
            step = self.indices()
        self.expect("]", "']'")
        return step

    def more(self, separator: str) -> bool:
        self.spaces()
        if self.peek() == separator:
            self.pos += 1
            return True
        return False

    def indices(self) -> Indices | Slice:
        first = self.integer()
        self.spaces()
        if self.peek() == ":":
            bounds = [first]
            while len(bounds) < 3 and self.more(":"):
                self.spaces()
                bounds.append(self.integer())
            while len(bounds) < 3:
                bounds.append(None)
            if bounds[2] == 0:
                raise self.error("a slice's step must not be 0")
            return Slice(bounds[0], bounds[1], bounds[2])
        if first is None:
            raise self.error(f"expected '*', a quoted key, an index, a slice or a filter, found {self._found()}")
        found = [first]
        while self.more(","):
            self.spaces()
            index = self.integer()
            if index is None:
                raise self.error(f"expected an index, found {self._found()}")
            found.append(index)
        return Indices(tuple(found))

    def integer(self) -> int | None:
        start = self.pos
        if self.peek() in ("-", "+"):
            self.pos += 1
        digits = self.pos
        while self.pos < len(self.text) and self.text[self.pos] in "0123456789":
            self.pos += 1
        if self.pos == digits:
            if self.pos != start:
                raise self.error("expected digits after the sign")
            return None
        if self.pos - digits > _MAX_DIGITS:
            raise self.error(f"a number of more than {_MAX_DIGITS} digits")
        return int(self.text[start:self.pos])

    def quoted(self) -> str:
        quote = self.text[self.pos]
        self.pos += 1
        chars: list[str] = []
        while self.pos < len(self.text):
            c = self.text[self.pos]
            self.pos += 1
            if c == quote:
                return "".join(chars)
            if c == "\\" and self.pos < len(self.text):
                escaped = self.text[self.pos]
                self.pos += 1
                chars.append({"n": "\n", "t": "\t"}.get(escaped, escaped))
            else:
                chars.append(c)
        raise self.error("unterminated quote")

    def filter(self) -> Filter:
        self.expect("?(", "'?('")
        self.spaces()
        if self.peek() != "@":
            raise self.error(f"a filter tests the current item, like [?(@.type==\"Ready\")]; found {self._found()}")
        self.pos += 1
        relative: list[Child | Indices] = []
        while self.peek() in (".", "["):
            if self.peek() == ".":
                if self.peek(2) == "..":
                    raise self.error("recursive descent ('..') is not supported inside a filter")
                self.pos += 1
                name = self.name()
                if not name:
                    raise self.error(f"expected a field name after '.', found {self._found()}")
                relative.append(Child((name,)))
            else:
                self.pos += 1
                self.spaces()
                if self.peek() and self.peek() in _QUOTES:
                    relative.append(Child((self.quoted(),)))
                else:
                    index = self.integer()
                    if index is None:
                        raise self.error(f"expected a quoted key or an index, found {self._found()}")
                    relative.append(Indices((index,)))
                self.expect("]", "']'")
        self.spaces()
        if self.peek() == ")":
            self.pos += 1
            return Filter(tuple(relative), None, None)
        op = next((o for o in _OPERATORS if self.peek(len(o)) == o), None)
        if op is None:
            c = self.peek()
            if c == "=":
                raise self.error("'=' compares nothing: use '=='")
            if c and c in "+-*/%":
                raise self.error(f"unexpected {c!r} (arithmetic is not supported)")
            raise self.error(f"expected a comparison (==, !=, <, >, <=, >=) or ')', found {self._found()}")
        self.pos += len(op)
        self.spaces()
        literal = self.literal()
        self.expect(")", "')'")
        return Filter(tuple(relative), op, literal)

    def literal(self) -> Literal:
        c = self.peek()
        if c and c in _QUOTES:
            return self.quoted()
        for word, value in (("true", True), ("false", False)):
            if self.peek(len(word)) == word and not self.peek(len(word) + 1)[len(word):].isalnum():
                self.pos += len(word)
                return value
        start = self.pos
        if self.peek() in ("-", "+"):
            self.pos += 1
        digits = self.pos
        while self.pos < len(self.text) and self.text[self.pos] in "0123456789.":
            self.pos += 1
        number = self.text[start:self.pos]
        body = number.lstrip("+-")
        whole, dot, fraction = body.partition(".")
        if not (_digits(whole) and (not dot or _digits(fraction))) or self.pos == digits:
            self.pos = start
            raise self.error(f"the right side of a comparison must be a quoted string, a number, true or "
                             f"false; found {self._found()}")
        if len(body) > 2 * _MAX_DIGITS:
            self.pos = start
            raise self.error(f"a number of more than {2 * _MAX_DIGITS} digits")
        return float(number) if dot else int(number)


def _digits(text: str) -> bool:
    # Not str.isdigit: it takes superscripts and other digits int() refuses.
    return bool(text) and all(c in "0123456789" for c in text)


# -- evaluation -------------------------------------------------------------------------------


class _Budget:
    def __init__(self, visits: int) -> None:
        self.left = visits

    def spend(self, visits: int) -> None:
        self.left -= visits
        if self.left < 0:
            raise TooCostly("the JSONPath evaluation visited too many nodes")


def find(path: Path, obj: Any, budget: int = MAX_VISITS) -> list[Any]:
    """The values `path` selects in `obj`, in order; raises TooCostly past `budget` visits.

    Pure and iterative: cost is bounded by the budget whatever `obj` (a member's status) holds.
    """
    spent = _Budget(budget)
    nodes: list[Any] = [obj]
    spent.spend(1)
    for step in path:
        nodes = _step(step, nodes, spent)
        if not nodes:
            break
    return nodes


def _step(step: Step, nodes: Sequence[Any], spent: _Budget) -> list[Any]:
    out: list[Any] = []
    if isinstance(step, Child):
        for node in nodes:
            spent.spend(len(step.names))
            if isinstance(node, dict):
                out.extend(node[name] for name in step.names if name in node)
    elif isinstance(step, AnyChild):
        for node in nodes:
            if isinstance(node, dict):
                spent.spend(len(node) + 1)
                out.extend(node[k] for k in _sorted_keys(node))
            elif isinstance(node, list):
                spent.spend(len(node) + 1)
                out.extend(node)
    elif isinstance(step, Indices):
        for node in nodes:
            spent.spend(len(step.indices))
            if isinstance(node, list):
                out.extend(node[i] for i in step.indices if -len(node) <= i < len(node))
    elif isinstance(step, Slice):
        for node in nodes:
            spent.spend(1)
            if isinstance(node, list):
                picked = node[step.start:step.stop:step.step]
                spent.spend(len(picked))
                out.extend(picked)
    elif isinstance(step, Descend):
        for node in nodes:
            _descend(node, out, spent)
    else:
        for node in nodes:
            if isinstance(node, list):
                for item in node:
                    spent.spend(1 + len(step.path))
                    if _matches(step, item):
                        out.append(item)
    return out


def _sorted_keys(node: dict[Any, Any]) -> list[Any]:
    try:
        return sorted(node)
    except TypeError:  # keys of several types: only a decoded JSON object's are all strings
        return list(node)


def _descend(node: Any, out: list[Any], spent: _Budget) -> None:
    """Pre-order, iterative: every non-empty map or list from `node` down (client-go's
    evalRecursive), so nesting depth costs no stack. Each container costs one visit plus one
    per child."""
    stack: list[Any] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, dict):
            children = [current[k] for k in _sorted_keys(current)]
        elif isinstance(current, list):
            children = current
        else:
            continue
        if not children:
            continue
        spent.spend(1 + len(children))
        out.append(current)
        stack.extend(c for c in reversed(children) if isinstance(c, dict | list))


def _matches(step: Filter, item: Any) -> bool:
    value = item
    for part in step.path:
        if isinstance(part, Child):
            if not isinstance(value, dict) or part.names[0] not in value:
                return False
            value = value[part.names[0]]
        else:
            index = part.indices[0]
            if not isinstance(value, list) or not -len(value) <= index < len(value):
                return False
            value = value[index]
    if step.op is None:
        return True
    return _compare(value, step.op, step.literal)


def _compare(left: Any, op: str, right: Literal | None) -> bool:
    """client-go's comparison where the kinds agree (numbers with numbers, strings with
    strings, booleans equal or not); values of different kinds are only unequal."""
    numbers = (int, float)
    if isinstance(left, bool) or isinstance(right, bool):
        if not (isinstance(left, bool) and isinstance(right, bool)) or op not in ("==", "!="):
            return op == "!="
        return (left == right) == (op == "==")
    if isinstance(left, numbers) and isinstance(right, numbers):
        a: Any = left
        b: Any = right
    elif isinstance(left, str) and isinstance(right, str):
        a, b = left, right
    else:
        return op == "!="
    if op == "==":
        return bool(a == b)
    if op == "!=":
        return bool(a != b)
    if op == "<":
        return bool(a < b)
    if op == ">":
        return bool(a > b)
    if op == "<=":
        return bool(a <= b)
    return bool(a >= b)


# -- printing ---------------------------------------------------------------------------------


def printed(values: Sequence[Any], limit: int = MAX_VALUE_CHARS) -> str:
    """The values as Kubernetes' printer shows them (strings bare, others as compact JSON,
    joined by spaces), cut at `limit` characters, a lone surrogate as "?": the cost is bounded
    by `limit`, not by the size of what was matched."""
    out: list[str] = []
    size = 0
    for i, value in enumerate(values):
        if i:
            out.append(" ")
            size += 1
        text = value[:limit - size + 1] if isinstance(value, str) else _bounded_json(value, limit - size + 1)
        out.append(text)
        size += len(text)
        if size > limit:
            break
    text = "".join(out)[:limit]
    # A lone surrogate (JSON's "\ud800") is no UTF-8, so no protobuf string: the binding that
    # stores the value could not be written, and the eviction would fail on every retry.
    return text if text.isascii() else text.encode(errors="replace").decode()


class _Raw(str):
    """Punctuation of the JSON being printed, as opposed to a string value."""


_END = object()


def _members(value: dict[Any, Any] | list[Any]) -> Iterator[Any]:
    if isinstance(value, dict):
        yield _Raw("{")
        for i, (key, item) in enumerate(value.items()):
            yield _Raw(("," if i else "") + _scalar(str(key), MAX_VALUE_CHARS) + ":")
            yield item
        yield _Raw("}")
    else:
        yield _Raw("[")
        for i, item in enumerate(value):
            if i:
                yield _Raw(",")
            yield item
        yield _Raw("]")


def _bounded_json(value: Any, limit: int) -> str:
    """Compact JSON of `value` (json.dumps with separators=(",", ":")), at most `limit`
    characters of it: iterative, stopping as soon as the limit is passed."""
    out: list[str] = []
    size = 0
    stack: list[Iterator[Any]] = [iter((value,))]
    while stack and size <= limit:
        item = next(stack[-1], _END)
        if item is _END:
            stack.pop()
            continue
        if isinstance(item, _Raw):
            text = str(item)
        elif isinstance(item, dict | list):
            stack.append(_members(item))
            continue
        else:
            text = _scalar(item, limit - size + 1)
        out.append(text)
        size += len(text)
    return "".join(out)[:limit]


def _scalar(value: Any, limit: int) -> str:
    if isinstance(value, str):
        value = value[:limit]
    elif isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 4 * max(limit, 1):
        # More digits than fit: Python would refuse to print past 4 300 of them.
        return "9" * limit
    try:
        return json.dumps(value, separators=(",", ":"))
    except (TypeError, ValueError):
        return "?" * min(limit, 1)


def extract(template: str, obj: Any) -> str | None:
    """The value a valid template selects from `obj`, as Kubernetes' printer shows it
    (strings bare, other values as JSON, several joined by spaces), at most MAX_VALUE_CHARS of
    it; None when nothing matches.

    Never raises: a template this grammar refuses (admitted by an older Flotilla, whose
    grammar was jsonpath-ng's) and an evaluation over its budget extract nothing, as a path
    that matches nothing does, so the eviction goes on without that label rather than failing
    on every retry.
    """
    try:
        path = parse(template)
    except JsonPathError:
        return None
    try:
        values = find(path, obj)
    except TooCostly:
        return None
    if not values:
        return None
    return printed(values)
