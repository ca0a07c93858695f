from __future__ import annotations

from surfbench.bench.base.validation import closest, validate_args

SCHEMA = {
    "type": "object",
    "properties": {
        "owner": {"type": "string"},
        "title": {"type": "string", "description": "issue title"},
        "state": {"type": "string", "enum": ["open", "closed"]},
        "limit": {"type": "integer", "minimum": 1, "maximum": 50},
        "labels": {"type": "array", "items": {"type": "integer"}},
        "options": {
            "type": "object",
            "properties": {"merge": {"type": "string", "enum": ["squash", "rebase"]}},
        },
    },
    "required": ["owner", "title"],
}


def kinds(args):
    return [(i.kind, i.path) for i in validate_args(args, SCHEMA)]


def test_valid_call_has_no_issues():
    assert validate_args({"owner": "a", "title": "t", "limit": 5, "labels": [1, 2]}, SCHEMA) == []


def test_missing_required_names_argument_and_type():
    issues = validate_args({"owner": "a"}, SCHEMA)
    assert [(i.kind, i.path) for i in issues] == [("missing_argument", "title")]
    assert "issue title" in issues[0].message


def test_wrong_type_says_expected_and_got():
    issue = validate_args({"owner": "a", "title": "t", "limit": "10"}, SCHEMA)[0]
    assert issue.kind == "type_error"
    assert "must be integer, got string" in issue.message


def test_bool_is_not_an_integer():
    assert kinds({"owner": "a", "title": "t", "limit": True}) == [("type_error", "limit")]


def test_bad_enum_lists_allowed_values_and_suggests():
    issue = validate_args({"owner": "a", "title": "t", "state": "opened"}, SCHEMA)[0]
    assert issue.kind == "enum_error"
    assert '"open", "closed"' in issue.message and 'did you mean "open"' in issue.message


def test_unknown_argument_did_you_mean():
    issue = validate_args({"owner": "a", "title": "t", "titel": "x"}, SCHEMA)[0]
    assert issue.kind == "unknown_argument"
    assert "did you mean 'title'" in issue.message


def test_nested_paths():
    assert kinds({"owner": "a", "title": "t", "labels": [1, "x"], "options": {"merge": "ff"}}) == [
        ("type_error", "labels[1]"),
        ("enum_error", "options.merge"),
    ]


def test_constraints():
    assert kinds({"owner": "a", "title": "t", "limit": 0}) == [("constraint", "limit")]


def test_non_object_arguments():
    assert [i.kind for i in validate_args(["a"], SCHEMA)] == ["type_error"]


def test_closest_prefers_spelling_then_substring():
    assert closest("issue_crate", ["issue_create", "issue_get", "repo_create"])[0] == "issue_create"
    assert "issue_comment_create" in closest("comment", ["issue_comment_create", "repo_get"])
