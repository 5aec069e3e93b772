"""statePreservation JSONPath under random input (flotilla/rules/jsonpath_template.py): any text
is either parsed or refused with the parser's own error, never anything else; a template the
grammar accepts, evaluated over any JSON a member could report, never raises, visits no more
nodes than its budget and prints no more than MAX_VALUE_CHARS."""

from __future__ import annotations

import string
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

import tests.property.strategies  # noqa: F401  (registers the hypothesis profiles)
from flotilla.rules.jsonpath_template import (
    MAX_VALUE_CHARS,
    JsonPathError,
    TooCostly,
    extract,
    find,
    jsonpath_template_problem,
    parse,
)
from tests.property.shares import Share

NAMES = ["jobID", "jobStatus", "items", "a", "b", "status", "name", "0"]
_names = st.sampled_from(NAMES) | st.text(string.ascii_letters + string.digits + "-_/:", min_size=1, max_size=6)
_quoted = st.text(st.characters(blacklist_characters="'\\"), max_size=6).map(lambda s: f"'{s}'")
_index = st.integers(-5, 5).map(str)
_bound = st.none() | st.integers(-5, 5)
_literal = _quoted | st.integers(-100, 100).map(str) | st.floats(-10, 10, allow_nan=False).map(lambda f: f"{f:.2f}") \
    | st.sampled_from(["true", "false"])
_op = st.sampled_from(["==", "!=", "<", ">", "<=", ">="])
_ws = st.sampled_from(["", " "])


@st.composite
def _slice(draw: st.DrawFn) -> str:
    start, stop = draw(_bound), draw(_bound)
    step = draw(st.none() | st.integers(-3, 3).filter(lambda s: s != 0))
    text = f"{'' if start is None else start}:{'' if stop is None else stop}"
    return text + (f":{step}" if step is not None else "")


@st.composite
def _filter(draw: st.DrawFn) -> str:
    path = "".join(draw(st.lists(_names.map(lambda n: "." + n) | _quoted.map(lambda q: f"[{q}]")
                                 | _index.map(lambda i: f"[{i}]"), min_size=1, max_size=3)))
    ws = draw(_ws)
    if draw(st.booleans()):
        return f"[?({ws}@{path}{ws})]"
    return f"[?({ws}@{path}{ws}{draw(_op)}{ws}{draw(_literal)}{ws})]"


_bracket = st.one_of(
    st.just("[*]"),
    st.lists(_index, min_size=1, max_size=3).map(lambda xs: f"[{','.join(xs)}]"),
    st.lists(_quoted, min_size=1, max_size=3).map(lambda qs: f"[{', '.join(qs)}]"),
    _slice().map(lambda s: f"[{s}]"),
    _filter(),
)
_step = st.one_of(
    _names.map(lambda n: "." + n),
    st.just(".*"),
    (_names | st.just("*")).map(lambda n: ".." + n),
    _bracket,
    _bracket.map(lambda b: ".." + b),
)


@st.composite
def templates(draw: st.DrawFn) -> str:
    """A template in the grammar the module accepts."""
    root = draw(st.sampled_from(["", "$"]))
    steps = draw(st.lists(_step, min_size=0 if root else 1, max_size=6))
    ws = draw(_ws)
    return f"{ws}{{{ws}{root}{''.join(steps)}{ws}}}{ws}"


def _json_values() -> st.SearchStrategy[Any]:
    keys = st.sampled_from(NAMES) | st.text(max_size=5)
    scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=6) | st.dictionaries(keys, inner, max_size=6),
                        max_leaves=60)


def _refused_only_by_the_parser(text: str) -> None:
    try:
        parse(text)
    except JsonPathError as e:
        assert str(e) and jsonpath_template_problem(text) == str(e)
    else:
        assert jsonpath_template_problem(text) is None


@given(st.text(max_size=60))
def test_any_text_is_parsed_or_refused_with_the_parsers_error(text: str) -> None:
    _refused_only_by_the_parser(text)
    _refused_only_by_the_parser("{" + text + "}")
    _refused_only_by_the_parser("{." + text + "}")


@given(templates(), st.data())
def test_a_broken_template_is_parsed_or_refused_with_the_parsers_error(template: str, data: st.DataObject) -> None:
    at = data.draw(st.integers(0, len(template)))
    insert = data.draw(st.text(alphabet="{}[]()'\".@$?*=~!<>,:-+/\\` &|\n" + "asub019", max_size=3))
    cut = data.draw(st.integers(0, 3))
    _refused_only_by_the_parser(template[:at] + insert + template[at + cut:])


@given(templates())
def test_every_generated_template_is_accepted(template: str) -> None:
    assert jsonpath_template_problem(template) is None, template


@st.composite
def _path_into(draw: st.DrawFn, obj: Any) -> str:
    """A template that walks into `obj` along keys and indexes it has: random templates alone
    rarely match random objects, and the matching branch must be exercised too."""
    steps = []
    while len(steps) < 6:
        if isinstance(obj, dict):
            names = sorted(k for k in obj if k in NAMES)
            if not names:
                break
            key = draw(st.sampled_from(names))
            steps.append("." + key)
            obj = obj[key]
        elif isinstance(obj, list) and obj:
            i = draw(st.integers(0, len(obj) - 1))
            steps.append(f"[{i}]")
            obj = obj[i]
        else:
            break
    return "{" + ("".join(steps) or "$") + "}"


def test_evaluation_never_raises_and_stays_bounded() -> None:
    matched = Share("a template that matched something", 0.05)

    @given(_json_values(), st.data(), st.integers(1, 2_000))
    def bounded(obj: Any, data: st.DataObject, budget: int) -> None:
        template = data.draw(st.one_of(templates(), _path_into(obj)))
        path = parse(template)
        try:
            found = find(path, obj, budget=budget)
        except TooCostly:
            pass
        else:
            assert len(found) <= budget
        value = extract(template, obj)
        matched.reached(value is not None)
        assert value is None or (len(value) <= MAX_VALUE_CHARS and value == value.encode().decode())

    bounded()
    matched.check()
