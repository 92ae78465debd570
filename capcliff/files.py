"""Reading user files and writing outputs atomically, with one-line errors."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from capcliff.errors import InputError


def read_text(path: Path, *, field: str) -> str:
    """The text of a user's file, or an InputError naming the field and the problem."""
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise InputError(f"{field}: cannot read {path}: {exc.strerror}") from None


def write_text_atomic(path: Path, text: str, *, overwrite: bool) -> None:
    """Write `text` to `path` atomically (see `write_bytes_atomic`)."""
    write_bytes_atomic(path, text.encode("utf-8"), overwrite=overwrite)


def write_bytes_atomic(path: Path, data: bytes, *, overwrite: bool) -> None:
    """Write `data` to `path` via a temporary file and a rename: a reader never sees half a file.

    An existing file is kept unless `overwrite` is set.
    """
    if path.exists() and not overwrite:
        raise InputError(f"output: {path} exists; pass --force to replace it")
    directory = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the file the usual mode
        os.replace(tmp, path)
    except OSError as exc:
        raise InputError(f"output: cannot write {path}: {exc.strerror}") from None
