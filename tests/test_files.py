"""The one writer (core.files): whole or unchanged, nothing left behind, and a full disk or a read-only folder said
in words, on real mounts and by injection."""
from __future__ import annotations

import errno
from pathlib import Path

import pytest

from core.files import CannotWrite, ensure_folder, temporary_name, write_atomic, writing
from tests.mounts import fill, read_only, small_disk


def test_a_file_is_replaced_whole(tmp_path: Path) -> None:
    target = tmp_path / "a.json"
    write_atomic(target, "one")
    write_atomic(target, b"two")
    write_atomic(target, lambda fh: fh.write(b"three"))
    assert target.read_text() == "three" and [p.name for p in tmp_path.iterdir()] == ["a.json"]


@pytest.mark.parametrize(("code", "words"), [(errno.ENOSPC, "no space left on the disk holding"),
                                             (errno.EROFS, "is read-only"), (errno.EACCES, "permission denied"),
                                             (errno.EIO, "cannot be written (")])
def test_a_failed_write_keeps_the_original_and_says_why(tmp_path: Path, code: int, words: str) -> None:
    target = tmp_path / "a.json"
    target.write_text("original")

    def fails(fh) -> None:
        fh.write(b"half")
        raise OSError(code, "injected")

    with pytest.raises(CannotWrite) as caught:
        write_atomic(target, fails)
    assert words in str(caught.value) and str(tmp_path) in str(caught.value) and caught.value.errno == code
    assert target.read_text() == "original" and [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_an_unlink_that_fails_too_never_hides_the_first_error(tmp_path: Path, monkeypatch) -> None:
    def no_unlink(self, missing_ok: bool = False) -> None:
        raise OSError(errno.EROFS, "cannot unlink either")

    monkeypatch.setattr(Path, "unlink", no_unlink)
    with pytest.raises(CannotWrite, match="no space left"):
        with writing(tmp_path / "a"):
            raise OSError(errno.ENOSPC, "full")


def test_other_errors_pass_through_and_clean_up(tmp_path: Path) -> None:
    with pytest.raises(KeyError):
        with writing(tmp_path / "a"):
            raise KeyError("x")
    assert list(tmp_path.iterdir()) == []


def test_a_real_full_disk(tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk", "1m") as disk:
        (disk / "kept").write_bytes(b"kept")
        with pytest.raises(CannotWrite, match=f"no space left on the disk holding {disk}"):
            write_atomic(disk / "kept", b"x" * 2_000_000)
        assert (disk / "kept").read_bytes() == b"kept" and sorted(p.name for p in disk.iterdir()) == ["kept"]
        fill(disk)
        with pytest.raises(CannotWrite, match="no space left"):
            write_atomic(disk / "new", b"x" * 10_000)
        assert not (disk / "new").exists() and not temporary_name(disk / "new").exists()


def test_a_real_read_only_folder(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    (folder / "kept").write_text("kept")
    with read_only(folder):
        with pytest.raises(CannotWrite, match=f"{folder} is read-only"):
            write_atomic(folder / "kept", "new")
        with pytest.raises(CannotWrite, match="is read-only"):
            ensure_folder(folder / "sub" / "deeper")
        assert (folder / "kept").read_text() == "kept"
