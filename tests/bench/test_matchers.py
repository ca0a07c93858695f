from __future__ import annotations

from surfbench.bench.suites.matchers import example_args, match_object, match_value


def errs(matchers, actual):
    return [(m.path, m.error_type) for m in match_object(matchers, actual)]


def test_acceptable_values_and_optional():
    m = {"unit": ["units", ""], "city": ["Paris", "paris, fr"]}
    assert errs(m, {"city": "  PARIS "}) == []
    assert errs(m, {"city": "Paris", "unit": "units"}) == []
    assert errs(m, {"unit": "units"}) == [("city", "missing_argument")]
    assert errs(m, {"city": "Lyon"}) == [("city", "wrong_value")]


def test_types_numbers_and_tolerance():
    assert errs({"n": 3}, {"n": 3.0}) == []
    assert errs({"n": 3}, {"n": "3"}) == [("n", "type_error")]
    assert errs({"x": {"$approx": 1.5, "$tol": 0.01}}, {"x": 1.505}) == []
    assert errs({"x": {"$approx": 1.5, "$tol": 0.01}}, {"x": 1.6}) == [("x", "wrong_value")]
    assert errs({"flag": True}, {"flag": 1}) == [("flag", "type_error")]


def test_regex_set_list_nested_and_extra():
    assert errs({"q": {"$regex": "^api$"}}, {"q": "API"}) == []
    assert errs({"l": {"$set": ["a", "b"]}}, {"l": ["B", "a"]}) == []
    assert errs({"l": {"$set": ["a", "b"]}}, {"l": ["a"]}) == [("l", "wrong_value")]
    assert errs({"l": [["a", "b"]]}, {"l": ["b", "a"]}) == [("l", "wrong_value")]  # a plain list is ordered
    nested = {"rules": {"approvals": 2, "push": [False, ""]}}
    assert errs(nested, {"rules": {"approvals": 2}}) == []
    assert errs(nested, {"rules": {"approvals": 1, "x": 1}}) == [
        ("rules.approvals", "wrong_value"),
        ("rules.x", "extra_argument"),
    ]
    assert errs({"a": 1}, {"a": 1, "b": 2}) == [("b", "extra_argument")]
    assert errs({"a": 1, "$extra": True}, {"a": 1, "b": 2}) == []
    assert match_value({"$any": True}, None) == []


def test_example_args_for_oracle():
    assert example_args({"a": [1, 2], "b": ["", "x"], "c": {"$set": [1]}, "d": {"$any": True}}) == {
        "a": 1,
        "b": "x",
        "c": [1],
    }


def test_may_be_omitted_takes_an_empty_value_as_omitted_like_bfcl():
    """BFCL's `""` means the argument may be omitted; its checker takes a call passing "" the same way."""
    m = {"city": "Paris", "unit": ["units", ""]}
    assert errs(m, {"city": "Paris", "unit": ""}) == []
    assert errs(m, {"city": "Paris", "unit": None}) == []
    assert errs(m, {"city": "Paris", "unit": "miles"}) == [("unit", "wrong_value")]
    assert errs({"city": "Paris"}, {"city": ""}) == [("city", "wrong_value")]  # required: "" is a wrong value


def test_a_list_value_may_hold_matchers():
    """The documented `[[...]]` form (an acceptable value that is a list) can hold `$regex` and nested objects."""
    m = {"obs": [[{"$regex": "^works at"}, "likes tea"]]}
    assert errs(m, {"obs": ["Works at Acme", "likes tea"]}) == []
    assert errs(m, {"obs": ["lives in Oslo", "likes tea"]}) == [("obs", "wrong_value")]
    assert errs(m, {"obs": ["Works at Acme"]}) == [("obs", "wrong_value")]
    objects = {"entities": [[{"name": "Bob", "type": {"$regex": "person"}}]]}
    assert errs(objects, {"entities": [{"name": "bob", "type": "Person"}]}) == []
    assert errs(objects, {"entities": [{"name": "Bob", "type": "Person", "x": 1}]}) == [("entities", "wrong_value")]
    assert example_args({"labels": [[{"$set": [1, 2]}, "b"]]}) == {"labels": [[1, 2], "b"]}  # the oracle's replay
