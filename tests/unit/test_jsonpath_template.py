"""The JSONPath of statePreservation rules (flotilla/rules/jsonpath_template.py): Kubernetes'
grammar only (client-go's util/jsonpath, as Karmada runs it), each refusal with its reason, and
an evaluation that is bounded in visits and in the length of what it prints."""

from __future__ import annotations

from typing import Any

import pytest

from flotilla.rules.jsonpath_template import (
    MAX_TEMPLATE_CHARS,
    MAX_VALUE_CHARS,
    REGEX_REFUSED,
    AnyChild,
    Child,
    Descend,
    Filter,
    Indices,
    JsonPathError,
    Slice,
    TooCostly,
    extract,
    find,
    jsonpath_template_problem,
    parse,
    printed,
)

ACCEPTED = [
    ("{ .jobStatus.jobID }", (Child(("jobStatus",)), Child(("jobID",)))),
    ("{.replicas}", (Child(("replicas",)),)),
    ("{$.status.phase}", (Child(("status",)), Child(("phase",)))),
    ("{$}", ()),
    ("{.}", ()),
    ("{.items[0].name}", (Child(("items",)), Indices((0,)), Child(("name",)))),
    ("{.items[-1]}", (Child(("items",)), Indices((-1,)))),
    ("{.items[0, 2]}", (Child(("items",)), Indices((0, 2)))),
    ("{.items[*]}", (Child(("items",)), AnyChild())),
    ("{.labels.*}", (Child(("labels",)), AnyChild())),
    ("{.items[1:3]}", (Child(("items",)), Slice(1, 3, None))),
    ("{.items[::2]}", (Child(("items",)), Slice(None, None, 2))),
    ("{.items[-2:]}", (Child(("items",)), Slice(-2, None, None))),
    ("{..jobID}", (Descend(), Child(("jobID",)))),
    ("{..[0]}", (Descend(), Indices((0,)))),
    ("{..*}", (Descend(), AnyChild())),
    ('{.conditions[?(@.type=="Ready")].status}',
     (Child(("conditions",)), Filter((Child(("type",)),), "==", "Ready"), Child(("status",)))),
    ("{.conditions[?( @.type != 'Ready' )]}", (Child(("conditions",)), Filter((Child(("type",)),), "!=", "Ready"))),
    ("{.items[?(@.n<2)]}", (Child(("items",)), Filter((Child(("n",)),), "<", 2))),
    ("{.items[?(@.n>-2.5)]}", (Child(("items",)), Filter((Child(("n",)),), ">", -2.5))),
    ("{.items[?(@.n<=0)]}", (Child(("items",)), Filter((Child(("n",)),), "<=", 0))),
    ("{.items[?(@.n>=10)]}", (Child(("items",)), Filter((Child(("n",)),), ">=", 10))),
    ("{.items[?(@.ok==true)]}", (Child(("items",)), Filter((Child(("ok",)),), "==", True))),
    ("{.items[?(@.ready)]}", (Child(("items",)), Filter((Child(("ready",)),), None, None))),
    ("{.items[?(@['a.b'][0]=='x')]}", (Child(("items",)), Filter((Child(("a.b",)), Indices((0,))), "==", "x"))),
    ("{.metadata.labels['app.kubernetes.io/name']}",
     (Child(("metadata",)), Child(("labels",)), Child(("app.kubernetes.io/name",)))),
    ("{.labels['a', \"b\"]}", (Child(("labels",)), Child(("a", "b")))),
    ("{.labels.app\\.kubernetes\\.io/name}", (Child(("labels",)), Child(("app.kubernetes.io/name",)))),
    ("{.status.ready-replicas}", (Child(("status",)), Child(("ready-replicas",)))),
    ("{['status']}", (Child(("status",)),)),
]


@pytest.mark.parametrize(("template", "path"), ACCEPTED, ids=[t for t, _ in ACCEPTED])
def test_accepted(template: str, path: tuple[Any, ...]) -> None:
    assert jsonpath_template_problem(template) is None
    assert parse(template) == path


REFUSED = [
    # What jsonpath-ng's extended grammar took and Kubernetes' has not: each named.
    ('{.items[?(@.name =~ /^a.*$/)]}', REGEX_REFUSED),
    ('{.name=~"x"}', REGEX_REFUSED),
    ("{$.name.`sub(/a/, b)`}", "extensions (`...`) are not supported"),
    ("{.name.sub(/a/, b)}", "function calls (sub(...)) are not supported"),
    ("{$.name.`len`}", "extensions (`...`) are not supported"),
    ("{len(.items)}", "function calls (len(...)) are not supported"),
    ("{.items[?(@.price * 2 > 10)]}", "arithmetic is not supported"),
    ("{.items[?(@.a + 1 > 2)]}", "arithmetic is not supported"),
    ("{.a*2}", "arithmetic is not supported"),
    ("{.items[?(@.a==1 && @.b==2)]}", "logical operators"),
    ("{.items[?(@.a==1 || @.b==2)]}", "logical operators"),
    ("{.items[?(@.a=1)]}", "use '=='"),
    ("{.items[?(@.a==@.b)]}", "must be a quoted string, a number, true or false"),
    ("{.items[?(@.a==null)]}", "must be a quoted string, a number, true or false"),
    ("{.items[?(@..a)]}", "recursive descent ('..') is not supported inside a filter"),
    ("{.items[?(.a)]}", "a filter tests the current item"),
    ("{.items[0:1:0]}", "step must not be 0"),
    ("{.items[" + "9" * 19 + "]}", "more than 18 digits"),
    # Templates, not paths: one expression, no range.
    ("{range .items[*]}{.name}{end}", "single JSONPath expression"),
    ("{range .items[*]}", "{range} is not supported"),
    ("{.a}{.b}", "single JSONPath expression"),
    ("job-{.a}", "in braces"),
    (".jobStatus.jobID", "in braces"),
    ("{ .a", "unbalanced braces"),
    (".a }", "unbalanced braces"),
    ("{{.a}}", "unbalanced braces"),
    ("{}", "empty JSONPath expression"),
    ("{jobStatus}", "must start with"),
    ("{@.a}", "must start with"),
    ("{.a[}", "invalid JSONPath expression"),
    ("{.a b}", "unexpected whitespace inside a path"),
    ("{.a['b}", "unterminated quote"),
    ("{.a.}", "expected a field name after '.'"),
    ("{...a}", "expected a field name after '..'"),
    ("{.a[?(@.b==1.)]}", "must be a quoted string"),
    ("{.a[?(@.b==²)]}", "must be a quoted string"),
    ("{" + ".a" * MAX_TEMPLATE_CHARS + "}", f"no more than {MAX_TEMPLATE_CHARS} characters"),
]


@pytest.mark.parametrize(("template", "reason"), REFUSED, ids=[t[:40] for t, _ in REFUSED])
def test_refused_with_the_reason(template: str, reason: str) -> None:
    problem = jsonpath_template_problem(template)
    assert problem is not None and reason in problem, problem
    with pytest.raises(JsonPathError):
        parse(template)


def test_a_syntax_error_says_where() -> None:
    assert jsonpath_template_problem("{ .a b}") == (
        "invalid JSONPath expression: unexpected whitespace inside a path at character 5")


STATUS = {
    "replicas": 2,
    "health": True,
    "jobStatus": {"jobID": "4f1d2c", "state": "RUNNING"},
    "conditions": [{"type": "Progressing", "status": "True"}, {"type": "Ready", "status": "False"}],
    "items": [{"name": "a", "n": 1}, {"name": "b", "n": 2.5}, {"name": "c", "n": "3"}, {"name": "d"}],
    "labels": {"app.kubernetes.io/name": "web", "tier": "front"},
    "nested": {"deeper": {"jobID": "inner"}},
}

EXTRACTED = [
    # Karmada's own example: strings bare, other values as JSON (§12.3).
    ("{ .replicas }", "2"),
    ("{ .health }", "true"),
    ("{.jobStatus.jobID}", "4f1d2c"),
    ("{.jobStatus}", '{"jobID":"4f1d2c","state":"RUNNING"}'),
    ('{.conditions[?(@.type=="Ready")].status}', "False"),
    ("{.conditions[?(@.type!='Ready')].type}", "Progressing"),
    ("{.items[?(@.n>=2)].name}", "b"),  # "3" is a string: not a number to compare
    ("{.items[?(@.n<'4')].name}", "c"),
    ("{.items[?(@.n)].name}", "a b c"),
    ("{.items[0].name}", "a"),
    ("{.items[-1].name}", "d"),
    ("{.items[5].name}", None),  # out of range: nothing
    ("{.items[1:3].name}", "b c"),
    ("{.items[::-2].name}", "d b"),
    ("{.items[0,2].name}", "a c"),
    ("{.items[*].n}", "1 2.5 3"),
    ("{.labels['app.kubernetes.io/name']}", "web"),
    ("{.labels.*}", "web front"),
    ("{..jobID}", "4f1d2c inner"),
    ("{.missing}", None),
    ("{.replicas.deeper}", None),
    ("{.labels[0]}", None),  # an index of a map: nothing
    ("{.labels[?(@.x)]}", None),  # a filter over a map: nothing
]


@pytest.mark.parametrize(("template", "value"), EXTRACTED, ids=[t for t, _ in EXTRACTED])
def test_extracted(template: str, value: str | None) -> None:
    assert extract(template, STATUS) == value


def test_recursive_descent_visits_maps_in_sorted_key_order_and_lists_in_order() -> None:
    status = {"b": {"k": 1}, "a": [{"k": 2}, {"k": 3}]}
    assert find(parse("{..k}"), status) == [2, 3, 1]


def test_a_template_admission_now_refuses_extracts_nothing() -> None:
    # Admitted by an older Flotilla (jsonpath-ng): evaluation must neither raise nor run a regex.
    assert extract('{.items[?(@.name =~ "a")].name}', STATUS) is None


def test_evaluation_has_a_budget() -> None:
    wide = {"items": list(range(100))}
    assert len(find(parse("{.items[*]}"), wide, budget=200)) == 100
    with pytest.raises(TooCostly):
        find(parse("{.items[*]}"), wide, budget=50)
    # Unions multiply: ten of them ten times over would be 10**10 nodes.
    union = "[" + ",".join(["0"] * 10) + "]"
    nested: Any = 0
    for _ in range(10):
        nested = [nested]
    with pytest.raises(TooCostly):
        find(parse("{" + union * 10 + "}"), nested)
    assert extract("{" + union * 10 + "}", nested) is None


def test_deep_nesting_costs_no_stack() -> None:
    deep: Any = {"jobID": "bottom"}
    for _ in range(50_000):
        deep = {"x": deep}
    with pytest.raises(TooCostly):
        find(parse("{..jobID}"), deep, budget=1_000)
    assert find(parse("{..jobID}"), deep, budget=200_000) == ["bottom"]


def test_what_is_printed_is_cut_at_its_limit() -> None:
    huge = {"s": "x" * 1_000_000, "l": list(range(50_000)), "m": {f"k{i}": i for i in range(100_000)},
            "i": 10 ** 5000}
    for template in ("{.s}", "{.l}", "{.m}", "{.l[*]}", "{.i}"):
        value = extract(template, huge)
        assert value is not None and len(value) == MAX_VALUE_CHARS, template
    assert printed([{"a": [1, "two", None, False]}]) == '{"a":[1,"two",null,false]}'
    assert printed(["a", 1, ["b"]], limit=5) == 'a 1 ['
