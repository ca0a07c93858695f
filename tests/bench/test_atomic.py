"""Files surfbench writes for a user: whole or not at all, and as readable as any file the user writes."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from surfbench.bench.base.atomic import write_atomic
from surfbench.bench.base.config import surface_config
from surfbench.bench.report.surface_report import surface_table, write_rows


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_static_table_is_readable_by_the_group_and_others(tmp_path: Path, gitea96, umask_022) -> None:
    """`surfbench surfaces --out static.csv` wrote the table 0600 (tempfile.mkstemp's mode), so a team
    sharing a results folder could not read it; it follows the umask like any file the user writes."""
    rows = surface_table(gitea96, [surface_config("full"), surface_config("core")])
    for name in ("static.csv", "static.json"):
        write_rows(rows, tmp_path / name)
        assert _mode(tmp_path / name) == 0o644, name


def test_a_failed_write_leaves_the_old_file_and_no_temporary_one(tmp_path: Path) -> None:
    target = tmp_path / "table.csv"
    target.write_text("old\n")

    def broken(tmp: str) -> None:
        Path(tmp).write_text("half")
        raise RuntimeError("disk gone")

    with pytest.raises(RuntimeError):
        write_atomic(target, broken)
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table.csv"]


def test_text_and_bytes_are_written_as_given(tmp_path: Path, umask_022) -> None:
    write_atomic(tmp_path / "a.txt", "x\r\ny\n")
    write_atomic(tmp_path / "b.bin", b"\x00\xff")
    assert (tmp_path / "a.txt").read_bytes() == b"x\r\ny\n"
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\xff"
    assert _mode(tmp_path / "a.txt") == 0o644
