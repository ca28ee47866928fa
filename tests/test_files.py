"""`--out` files are written whole or not at all (`tracecli.files.write_out`, used by export, graph export, eval)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tracecli.errors import BadInput
from tracecli.files import write_out


def test_text_and_bytes_are_written_and_no_temporary_file_is_left(tmp_path: Path) -> None:
    write_out(tmp_path / "a.md", "Porto ✓\n")
    write_out(tmp_path / "b.json", b'{"x": 1}')
    assert (tmp_path / "a.md").read_text(encoding="utf-8") == "Porto ✓\n"
    assert (tmp_path / "b.json").read_bytes() == b'{"x": 1}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.md", "b.json"]


def test_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="is a directory"):
        write_out(tmp_path, "x")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_an_unwritable_place_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "out.md"
    target.write_text("old", encoding="utf-8")
    tmp_path.chmod(0o500)
    try:
        with pytest.raises(BadInput, match="cannot write"):
            write_out(target, "new")
    finally:
        tmp_path.chmod(0o700)
    assert target.read_text(encoding="utf-8") == "old"
    assert not list(tmp_path.glob("*.tmp"))


def test_a_missing_folder_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match=r"cannot write .*nowhere.*out\.md") as err:
        write_out(tmp_path / "nowhere" / "out.md", "x")
    assert "\n" not in str(err.value)
    assert not (tmp_path / "nowhere").exists()
