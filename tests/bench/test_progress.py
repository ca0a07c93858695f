"""The per-episode progress line says what happened in words a newcomer reads: solved, or failed and why."""

from __future__ import annotations

import io

from surfbench.bench.contracts.records import EpisodeOutcome
from surfbench.bench.run.progress import outcome, plain_progress

EPISODE = {
    "task_id": "hot-issue-get",
    "success": False,
    "first_try_correct": 0,
    "expected_calls": 1,
    "round_trips": 3,
    "wall_s": 2.5,
    "completion_tokens_total": 40,
    "failures": [],
    "error_types": [],
    "error": None,
    "outcome": EpisodeOutcome.RAN,
    "stuck": False,
}


class _Cell:
    def label(self) -> str:
        return "forge/core/qwen"


def test_a_solved_episode_says_solved():
    assert outcome({**EPISODE, "success": True}) == "solved"


def test_a_failed_episode_names_its_first_failed_check_and_counts_the_rest():
    line = outcome({**EPISODE, "failures": ["expected issue_get, called issue_list", "answer lacks 'open'"]})
    assert line == "failed (expected issue_get, called issue_list (+1 more))"


def test_without_a_failure_text_the_error_types_are_named_once_each():
    assert outcome({**EPISODE, "error_types": ["schema_invalid", "schema_invalid", "not_exposed"]}) == (
        "failed (schema_invalid, not_exposed)"
    )


def test_a_harness_error_a_context_overflow_and_a_stuck_stop_are_said():
    harness = {**EPISODE, "error": "KeyError: 'x'", "outcome": EpisodeOutcome.HARNESS_ERROR}
    assert outcome(harness) == "failed (harness error: KeyError: 'x')"
    overflow = {**EPISODE, "error": "context_overflow: 17000 > 16384", "outcome": EpisodeOutcome.CONTEXT_OVERFLOW}
    assert outcome(overflow) == "failed (context_overflow: 17000 > 16384)"  # an outcome, not a harness error
    assert outcome({**EPISODE, "stuck": True, "error_types": ["schema_invalid"]}) == (
        "failed (stuck, stopped; schema_invalid)"
    )


def test_a_long_reason_is_cut_on_one_line():
    text = outcome({**EPISODE, "failures": ["x" * 500 + "\nsecond line"]})
    assert len(text) < 110 and "\n" not in text and text.endswith("…)")


def test_the_plain_progress_line_has_no_ok_or_bad_marks():
    out = io.StringIO()
    report = plain_progress(out)
    report(_Cell(), 0, 2, None)  # type: ignore[arg-type]
    report(_Cell(), 1, 2, {**EPISODE, "success": True})  # type: ignore[arg-type]
    report(_Cell(), 2, 2, {**EPISODE, "failures": ["state: issue 3 still open"]})  # type: ignore[arg-type]
    lines = out.getvalue().splitlines()
    assert "hot-issue-get: solved; first-try 0/1" in lines[1]
    assert "hot-issue-get: failed (state: issue 3 still open); first-try" in lines[2]
    assert not any(" BAD " in line or ": ok " in line for line in lines)


def test_the_report_command_prints_the_comparison_a_reader_reads_first():
    from surfbench.bench.report.report import compact_table

    md = (
        "# surfbench report\n\n## Surfaces x models\n\n"
        "| suite | surface | episodes | prompt tok/step | round trips (overhead) "
        "| first-try args [95% CI] | success |\n"
        "|---|---|---|---|---|---|---|\n"
        "| forge | core | 6 | 2,143 | 4.7 (0.0) | 17% [3%, 56%] | 0% |\n"
        "| forge | preselect | 6 | 957.3 | 4.3 (0.0) | 33% [10%, 70%] | 17% |\n\n"
        "## Next\n\n| operation | hot |\n|---|---|\n| repo_get | hot |\n"
    )
    lines = compact_table(md).splitlines()
    assert lines[0].split() == ["surface", "prompt", "tok/step", "round", "trips", "(overhead)", "first-try", "args",
                                "[95%", "CI]", "success"]  # fmt: skip
    assert [line.split()[0] for line in lines[2:]] == ["core", "preselect"], "the next table is not part of it"
    assert lines[3].split()[-1] == "17%"


def test_a_url_password_cut_by_the_line_width_is_still_redacted():
    """The reason is cut to the line's width before it is printed: a URL cut inside its password lost its
    '@', so neither the pattern nor the registered whole password found the part that was printed."""
    password = "cutpw-" + "q" * 30
    error = f"ModelError: openai/fake at http://user:{password}@127.0.0.1:9/v1: call failed"
    out = io.StringIO()
    report = plain_progress(out)
    report(_Cell(), 1, 1, {**EPISODE, "error": "x" * 20 + " " + error})  # type: ignore[arg-type]
    assert "cutpw-" not in out.getvalue()
    assert "[redacted" in out.getvalue()
