"""``surfbench synth``'s verification: each planted bad candidate is rejected, for its own reason; a good one is
kept with its provenance in its content hash; the writer and the checker are wired to model clients.

The candidates are planted by hand over the forge (its scenario: issue 5 of acme/web is closed, issue 3 has
no comments, acme/web's topics are web and frontend); everything else is the real engine: the forge's
world, the duplicate check against its hand-written tasks, and the replay through the real loop and scorer.
"""

from __future__ import annotations

import math
import random
import time
from pathlib import Path
from typing import Any

import pytest

from surfbench.bench.models.scripted import call_turn
from surfbench.bench.models.types import ModelRequest, ModelTurn
from surfbench.bench.store.identity import task_hash
from surfbench.bench.suites.fields import SuiteError
from surfbench.bench.suites.format_checks import task_from
from surfbench.bench.synth import synth_verify
from surfbench.bench.synth.synth_build import GENERATOR, Candidate, Draft, Ref
from surfbench.bench.synth.synth_run import Model, Synthesizer, largest_remainder
from surfbench.bench.synth.synth_spec import Say, SynthPlan, load_spec
from surfbench.bench.synth.synth_verify import ReplayClient

WEB = {"owner": "acme", "repo": "web"}


@pytest.fixture(scope="module")
def synth() -> Synthesizer:
    return Synthesizer("forge", 10, 7)


def planted(text: str, *calls: tuple[str, dict[str, Any]], answer: Any = None, drawn: tuple[str, ...] = (),
            others: list[dict[str, Any]] | None = None, require_calls: bool = False) -> Candidate:  # fmt: skip
    ops = tuple(op for op, _ in calls)
    say = Say("planted.1", text, tuple({} for _ in ops), answer)
    plan = SynthPlan("pair:planted" if len(ops) > 1 else ops[0], ops, None, (say,), require_calls=require_calls)
    drafts = [Draft(op, dict(args), drawn={k: k for k in drawn}) for op, args in calls]
    return Candidate(plan, say, text, drafts, dict(WEB), others or [])


def test_a_sound_candidate_is_kept_with_checks_read_off_the_backend(synth):
    close = ("issue_edit", {**WEB, "index": 3, "state": "closed"})
    cand = planted("Shut issue 3 of acme/web, it is done.", close, drawn=("index",), others=[{**WEB, "index": 4}])
    verdict = synth._judge(cand)
    assert verdict.kept, verdict.reason
    row = verdict.row
    assert row["split"] == "synth" and row["tags"] == ["hot", "single", "write"]
    # the change first, then what is next to it: the repository's issues, the other fields
    assert row["state"][0] == {"path": "repos.acme/web.issues.3.state", "match": "closed"}
    assert {"path": "repos.acme/web.issues", "keys": [str(n) for n in range(1, 9)]} in row["state"]
    assert [c["match"]["title"] for c in row["state"] if c["path"] == "repos.acme/web.issues.3"] == [
        "Typo in README install section"
    ]
    assert row["meta"]["synth"] == {"generator": GENERATOR, "seed": 7, "template": "planted.1", "writer": None}
    assert any(step.startswith("wrong id index=4: fails") for step in verdict.steps), verdict.steps
    assert any(step.startswith("missing index: fails") for step in verdict.steps), verdict.steps


def test_a_read_keeps_the_answer_the_backend_returned(synth):
    cand = planted("Who opened issue 6 of acme/web?", ("issue_get", {**WEB, "index": 6}), answer="author",
                   drawn=("index",), others=[{**WEB, "index": 2}])  # fmt: skip
    verdict = synth._judge(cand)
    assert verdict.kept, verdict.reason
    assert verdict.row["answer"] == {"contains": ["carol"]}  # the scenario's author of issue 6, not a template's word


@pytest.mark.parametrize(
    ("code", "text", "calls", "answer"),
    [
        ("schema_invalid", "Show issue three of acme/web.", [("issue_get", {**WEB, "index": "three"})], "title"),
        ("names_operation", "Run issue_get on issue 2 of acme/web.", [("issue_get", {**WEB, "index": 2})], "title"),
        ("names_argument", "Close issue 2 of acme/web with state=closed.",
         [("issue_edit", {**WEB, "index": 2, "state": "closed"})], None),
        ("duplicate", "What is issue #3 in acme/web about?", [("issue_get", {**WEB, "index": 3})], "title"),
        ("replay_failed", "What is issue 42 of acme/web about?", [("issue_get", {**WEB, "index": 42})], "title"),
        ("no_effect", "Close issue 5 in acme/web.", [("issue_edit", {**WEB, "index": 5, "state": "closed"})], None),
        ("empty_answer", "What did people write on issue 3 of acme/web?",
         [("issue_comment_list", {**WEB, "index": 3})], "comments.*.body"),
        ("answer_in_request", "Name the first topic of acme/web.", [("repo_topics_list", dict(WEB))], "topics.0"),
        ("unresolved", "", [("issue_get", {**WEB, "index": 1})], "title"),
    ],
)  # fmt: skip
def test_each_planted_bad_candidate_is_rejected_for_its_reason(synth, code, text, calls, answer):
    verdict = synth._judge(planted(text, *calls, answer=answer, drawn=("index",), others=[{**WEB, "index": 1}]))
    assert not verdict.kept
    assert verdict.code == code, verdict.reason


def test_a_call_the_checks_do_not_need_is_a_surviving_mutation(synth):
    # create then read back, where the read is not required: reading the wrong repository still passes every
    # check (the number is in the create's own result), so the task does not test the read
    cand = planted(
        "Open an issue in acme/web titled 'Planted bug', then fetch it and tell me its number.",
        ("issue_create", {**WEB, "title": "Planted bug"}),
        ("issue_get", {**WEB, "index": Ref(0, "number")}),
        answer="1:number", drawn=("owner", "repo"), others=[{"owner": "bob", "repo": "notes"}],
    )  # fmt: skip
    verdict = synth._judge(cand)
    assert verdict.code == "mutation_survives", verdict.reason
    assert "repo='notes'" in verdict.reason
    required = planted(cand.text, *[(d.op, d.args) for d in cand.drafts], answer="1:number",
                       drawn=("owner", "repo"), others=cand.others, require_calls=True)  # fmt: skip
    assert synth._judge(required).kept  # asking for both calls makes the wrong read fail the calls check


def test_checks_that_hold_without_any_call_are_trivial(synth, monkeypatch):
    holds = [{"path": "repos.acme/web.issues.3.state", "equals": "open"}]  # true before any call
    monkeypatch.setattr(synth_verify, "state_checks", lambda *a: holds)
    cand = planted("Rename issue 3 in acme/web to 'Planted'.", ("issue_edit", {**WEB, "index": 3, "title": "Planted"}))
    verdict = synth._judge(cand)
    assert verdict.code == "trivial", verdict.reason


def test_provenance_is_part_of_the_content_hash(synth):
    cand = planted("Close issue 4 in acme/web.", ("issue_edit", {**WEB, "index": 4, "state": "closed"}))
    row = synth._judge(cand).row
    base = task_hash(task_from(row, Path("x.yaml"), 0))
    for key, value in (("writer", "some-model"), ("template", "issue_edit.2"), ("seed", 8)):
        changed = {**row, "meta": {"synth": {**row["meta"]["synth"], key: value}}}
        assert task_hash(task_from(changed, Path("x.yaml"), 0)) != base, key


class Writer:
    """A fake writer model: its rewrite for each request it is shown."""

    def __init__(self, answer: str) -> None:
        self.answer, self.seen = answer, []

    def complete(self, request: ModelRequest) -> ModelTurn:
        self.seen.append(request.messages[-1]["content"])
        return ModelTurn(text=self.answer)


def test_the_writer_rewrites_and_a_lost_value_rejects():
    keeps = Writer("Could you close acme/web issue number 2 for me?")
    synth = Synthesizer("forge", 10, 7, writer=Model("fake-writer", keeps))
    cand = planted("Close issue 2 in acme/web.", ("issue_edit", {**WEB, "index": 2, "state": "closed"}))
    verdict = synth._judge(cand)
    assert keeps.seen == ["Close issue 2 in acme/web."]
    assert verdict.kept and verdict.row["turns"] == ["Could you close acme/web issue number 2 for me?"]
    assert verdict.row["meta"]["synth"]["writer"] == "fake-writer"
    loses = Synthesizer("forge", 10, 7, writer=Model("fake-writer", Writer("Please close that issue.")))
    cand = planted("Close issue 2 in acme/web.", ("issue_edit", {**WEB, "index": 2, "state": "closed"}))
    assert loses._judge(cand).code == "writer_dropped_value"


class Solver:
    """A fake checker model that makes one fixed call, then answers."""

    def __init__(self, op: str | None, args: dict[str, Any]) -> None:
        self.op, self.args = op, args

    def complete(self, request: ModelRequest) -> ModelTurn:
        done = any(m["role"] == "tool" for m in request.messages)
        return ModelTurn(text="Done.") if done or self.op is None else call_turn((self.op, self.args))


def test_the_checker_must_solve_the_request_and_its_pass_rate_is_reported():
    args = {**WEB, "index": 6, "state": "closed"}
    good = Synthesizer("forge", 10, 7, checker=Model("fake-checker", Solver("issue_edit", args)), checker_tries=2)
    assert good._judge(planted("Close issue 6 in acme/web.", ("issue_edit", args))).kept
    assert good._checked == [1, 1]
    bad = Synthesizer("forge", 10, 7, checker=Model("fake-checker", Solver(None, {})), checker_tries=2)
    verdict = bad._judge(planted("Close issue 6 in acme/web.", ("issue_edit", args)))
    assert verdict.code == "checker_failed" and bad._checked == [0, 1]


def test_the_replay_answers_with_the_results_it_got_not_its_own_words():
    client = ReplayClient([("repo_get", dict(WEB))])
    first = client.complete(ModelRequest(messages=({"role": "user", "content": "x"},)))
    assert first.tool_calls[0].name == "repo_get"
    messages = (
        {"role": "user", "content": "x"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "function": {"name": "repo_get"}}]},
        {"role": "tool", "content": '{"default_branch": "main", "private": false}'},
    )
    assert client.complete(ModelRequest(messages=messages)).text == "main\nno"


def test_quotas_follow_the_weights():
    assert largest_remainder({"hot": 4.67, "a": 0.37, "b": 0.37}, 10) == {"hot": 8, "a": 1, "b": 1}
    assert largest_remainder({"hot": 4.67, "a": 0.37, "b": 0.37}, 100) == {"hot": 86, "a": 7, "b": 7}
    assert sum(largest_remainder({str(i): 1.0 for i in range(7)}, 100).values()) == 100


def quadratic_largest_remainder(weights: dict[str, float], total: int) -> dict[str, int]:
    """The split as it was before issue 49, verbatim: the reference every shipped synthesized split came from."""
    mass = sum(weights.values())
    if total <= 0 or mass <= 0:
        return dict.fromkeys(weights, 0)
    exact = {k: total * w / mass for k, w in weights.items()}
    out = {k: math.floor(v) for k, v in exact.items()}
    order = sorted(weights, key=lambda k: (-(exact[k] - out[k]), list(weights).index(k)))
    for k in order[: total - sum(out.values())]:
        out[k] += 1
    return out


def test_quotas_are_the_same_as_before_ties_included():
    rng = random.Random(49)
    cases = [({"a": 1.0, "b": 1.0, "c": 1.0}, 2), ({"c": 1.0, "a": 1.0, "b": 1.0}, 1), ({"x": 0.0, "y": 0.0}, 5),
             ({"a": 1.0}, 0), ({"a": 0.5, "b": 0.0, "c": 0.5}, 3), ({f"op{i}": 1e-9 for i in range(9)}, 4),
             ({"hot": 4.67, "a": 0.37, "b": 0.37, "c": 0.1}, 7)]  # fmt: skip
    for size in (2, 7, 40, 500):
        for total in (1, 3, size // 2 + 1, 200):
            weights = {f"op{i}": rng.choice([1.0, 0.37, 2.5, rng.random(), 1e-9]) for i in range(size)}
            cases.append((dict(reversed(list(weights.items()))) if total % 2 else weights, total))
    for weights, total in cases:
        got = largest_remainder(weights, total)
        assert got == quadratic_largest_remainder(weights, total) and list(got) == list(weights), (weights, total)


def test_quotas_over_ten_thousand_operations_take_under_half_a_second():
    weights = {f"op{i}": 1.0 + (i % 7) / 10 for i in range(10_000)}  # the old split: 0.95 s to 3 s
    start = time.perf_counter()
    quotas = largest_remainder(weights, 200)
    assert time.perf_counter() - start < 0.5 and sum(quotas.values()) == 200


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("ops: {issue_gte: {say: [x]}}", "operation 'issue_gte' not in the catalog (did you mean issue_get?)"),
        ("ops: {issue_get: {say: [{text: x, args: {indx: 3}}]}}", "has no argument 'indx' (did you mean 'index'?)"),
        ("ops: {issue_get: {say: [{txt: x}]}}", "unknown key 'txt' (did you mean 'text'?)"),
        ("pairs: {p: {calls: [issue_get], say: [x]}}", "calls needs two or more operations"),
        ("values: {title: [a]}\nops: {issue_create: {say: [{text: x, args: {title: $titel}}]}}",
         "$titel is not a list under values: (did you mean $title?)"),
    ],
)  # fmt: skip
def test_a_malformed_templates_file_is_one_error_naming_the_file_and_the_place(tmp_path: Path, synth, text, says):
    (tmp_path / "synth").mkdir()
    (tmp_path / "synth" / "templates.yaml").write_text(text)
    with pytest.raises(SuiteError) as err:
        load_spec(tmp_path, synth.suite.catalog)
    assert str(tmp_path / "synth" / "templates.yaml") in str(err.value) and says in str(err.value)
