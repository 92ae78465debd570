"""Reading user files and writing outputs atomically, with one-line errors.

Inputs: a file that is missing, a directory, binary, not UTF-8 or unreadable is refused with the
field that named it. Outputs: `check_outputs` validates every output path of a run before any
work starts (no existing file without --force, never an input of the same run, never two outputs
on one path, a folder that exists); `write_bytes_atomic` writes through a temporary file and a
rename, so a reader never sees half a file.
"""

from __future__ import annotations

import errno
import json
import math
import os
import stat
import sys
import tempfile
import tomllib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from capcliff.errors import InputError

# Bytes looked at to tell a binary file from text (a NUL byte in them: binary).
BINARY_SNIFF_BYTES = 8192


def read_bytes(path: Path, *, field: str) -> bytes:
    """The bytes of a user's file, or an InputError naming the field and the problem."""
    problem = unreadable(path)
    if problem is not None:
        raise InputError(f"{field}: cannot read {path}: {problem}")
    try:
        return file_bytes(path)
    except OSError as exc:
        raise InputError(f"{field}: cannot read {path}: {exc.strerror}") from None


def file_bytes(path: Path) -> bytes:
    """All bytes of `path`. Opened without waiting: a FIFO no program writes to reads as empty
    (then refused as such) instead of blocking the run forever in open(2), while a pipe with its
    writer there (`--workload <(zcat t.jsonl.gz)`) reads as usual. A device (/dev/zero,
    /dev/urandom, a terminal) is refused: reading one never ends (a MemoryError)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with open(fd, "rb") as handle:
        mode = os.fstat(fd).st_mode
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISSOCK(mode):
            raise OSError(errno.EINVAL, "a device or socket, not a file")
        os.set_blocking(fd, True)
        return handle.read()


def unreadable(path: Path) -> str | None:
    """Why `path` cannot be read as a file (None when it can be tried)."""
    try:
        if path.is_dir():
            return "a directory, not a file"
        if not path.exists():
            return "no such file"
    except OSError as exc:  # a name past the system's limit (ENAMETOOLONG), a loop of links
        return exc.strerror or type(exc).__name__
    return None


def is_file(path: Path) -> bool:
    """Whether `path` names a file; False, not an OSError, for a name the system refuses (one
    past 255 bytes a part, as a list of 40 GPU ids read as one file name)."""
    try:
        return path.is_file()
    except OSError:
        return False


def text_problem(data: bytes) -> str | None:
    """Why `data` is not UTF-8 text (None when it is): binary, or another encoding."""
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        return "a binary file, not text"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})"
    return None


def decode_text(data: bytes, path: Path, *, field: str) -> str:
    """`data` as UTF-8 text, less a leading byte-order mark (Excel and Notepad write one; JSON,
    CSV headers and TOML read it as a character); a binary file or another encoding is an
    InputError."""
    problem = text_problem(data)
    if problem is not None:
        raise InputError(f"{field}: cannot read {path}: {problem}")
    return data.decode("utf-8-sig")


def read_text(path: Path, *, field: str) -> str:
    """The UTF-8 text of a user's file, or an InputError naming the field and the problem."""
    return decode_text(read_bytes(path, field=field), path, field=field)


def jsonl_lines(text: str) -> tuple[str, ...]:
    """The lines of a JSON Lines text, split at newlines only: `str.splitlines` also splits at
    U+2028, U+0085 and the like, which JSON strings may hold (a `session_id` with one was cut in
    two); a carriage return before the newline is whitespace to JSON."""
    lines = text.split("\n")
    return tuple(lines[:-1] if lines and lines[-1] == "" else lines)


class DuplicateKeyError(ValueError):
    """A JSON object that names one key twice (see `unique_object`)."""


def unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's pairs as a dict, refusing a key given twice: Python's reader keeps the
    last silently (`{"mean_tpot_ms": 14, ..., "mean_tpot_ms": 30}` was fitted at 30 ms)."""
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise DuplicateKeyError(f"{key_label(key)!r:.60}: key given twice; give it once")
        data[key] = value
    return data


# the decoders `json.loads` builds on every call (a JSONL trace parses one line at a time)
_DECODER = json.JSONDecoder()
_UNIQUE_KEYS = json.JSONDecoder(object_pairs_hook=unique_object)


def parse_json(
    text: str,
    *,
    source: str,
    error: type[InputError] = InputError,
    finite: bool = True,
    unique_keys: bool = False,
) -> Any:
    """`text` parsed as JSON; an InputError `source: (json): problem` for a syntax error, nesting
    too deep for Python's parser, an integer of more digits than Python converts (4,300), or a
    non-finite number (NaN, Infinity, or a literal such as 1e400 that overflows to infinity),
    the last naming the field that holds it (`finite=False`: the caller checks its fields);
    `unique_keys`: a key given twice in one object too (capcliff's own inputs: traces, results,
    baselines; a model's config.json keeps the last, as transformers and the engines read it)."""

    def describe(exc: Exception) -> str:
        assert isinstance(exc, json.JSONDecodeError)
        return f"{exc.msg} at line {exc.lineno}"

    def loads(raw: str) -> Any:
        if isinstance(raw, str) and not raw.startswith("\ufeff"):  # json.loads refuses a BOM
            return (_UNIQUE_KEYS if unique_keys else _DECODER).decode(raw)
        return json.loads(raw, object_pairs_hook=unique_object if unique_keys else None)

    data = _parsed(loads, text, (json.JSONDecodeError, describe), "json", source, error)
    if finite:
        refuse_non_finite(data, source=source, error=error)
    return data


def json_problem(text: str) -> tuple[Any, str | None]:
    """(value, None) for `text` parsed as JSON as `parse_json` parses it (NaN and Infinity kept:
    the caller checks its fields; a key given twice keeps the last, as json.loads), else (None,
    the problem in words: a syntax error, nesting too deep, an integer past 4,300 digits)."""
    try:
        return parse_json(text, source="", finite=False), None
    except InputError as exc:
        return None, str(exc).split("(json): ", 1)[-1]


def parse_toml(
    text: str, *, source: str, error: type[InputError] = InputError, finite: bool = True
) -> dict[str, Any]:
    """`text` parsed as TOML; an InputError `source: (toml): problem` as `parse_json` (TOML's
    `inf` and `nan` are refused naming their key unless `finite=False`: the caller's validation
    refuses them, every problem listed)."""
    deep = _deep_toml_key(text)
    if deep is not None:
        raise error(
            f"{source}: (toml): line {deep[0]}: a key {deep[1]:,} levels deep; keys nest at most "
            f"{MAX_TOML_KEY_PARTS} levels"
        )
    data: dict[str, Any] = _parsed(
        tomllib.loads, text, (tomllib.TOMLDecodeError, str), "toml", source, error
    )
    if finite:
        refuse_non_finite(data, source=source, error=error)
    return data


# Set: the most dot-separated parts one TOML key or table header may have. tomllib's time grows
# with the square of a dotted key's length (10,000 parts: 1 s; 100,000: minutes and gigabytes),
# and no capcliff file nests more than a few levels.
MAX_TOML_KEY_PARTS = 100


def _deep_toml_key(text: str) -> tuple[int, int] | None:
    """(line number, parts) of the first key or `[table]` header of more than
    `MAX_TOML_KEY_PARTS` dot-separated parts, else None. A quoted dot counts too: a bound, not
    a parse; a line with neither `[` first nor `=` (a multi-line value's) holds no key."""
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.lstrip()
        if stripped.startswith("["):
            key = stripped.split("]", 1)[0]
        elif "=" in line:
            key = line.split("=", 1)[0]
        else:
            continue
        parts = key.count(".") + 1
        if parts > MAX_TOML_KEY_PARTS:
            return number, parts
    return None


def _parsed(
    loads: Callable[[str], Any],
    text: str,
    syntax: tuple[type[ValueError], Callable[[Exception], str]],
    kind: str,
    source: str,
    error: type[InputError],
) -> Any:
    """`loads(text)`, each way it can fail as one line `source: (kind): problem`: a syntax error
    (`syntax`: its exception type and how to say it), nesting too deep, a number too long."""
    try:
        return loads(text)
    except syntax[0] as exc:
        raise error(f"{source}: ({kind}): {syntax[1](exc)}") from None
    except RecursionError:
        raise error(f"{source}: ({kind}): nested too deeply") from None
    except DuplicateKeyError as exc:
        raise error(f"{source}: ({kind}): {exc}") from None
    except ValueError as exc:  # int-string conversion limit
        raise error(f"{source}: ({kind}): {_number_problem(exc)}") from None


def _number_problem(exc: ValueError) -> str:
    if "digits" in str(exc):
        return "an integer with more than 4,300 digits; give a number of sensible size"
    return str(exc).split("\n")[0]


# The largest integer a float holds (about 1.8e308): a JSON or TOML integer past it (309 to
# 4,300 digits parse) raised OverflowError wherever it met a float.
MAX_FLOAT_INT = int(sys.float_info.max)


def finite_number(value: object) -> bool:
    """Whether `value` is a number (not a boolean) that a float holds finitely: not NaN or
    infinite, and no integer past MAX_FLOAT_INT."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if isinstance(value, int):
        return abs(value) <= MAX_FLOAT_INT
    return math.isfinite(value)


def number_text(value: object) -> str:
    """`value` for a one-line message: an integer too long to print whole by its digit count."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_FLOAT_INT:
        return f"an integer of {len(str(abs(value))):,} digits"
    return repr(value)


def non_finite_field(data: Any) -> tuple[str, float | str] | None:
    """(dotted path, value) of the first NaN or infinite float, or integer past a float's range
    (its value as `number_text`), in parsed JSON/TOML `data` (lists as `name[i]`), or None.
    Iterative: parsed data may nest hundreds deep."""
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            return where or "(value)", value
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_FLOAT_INT:
            return where or "(value)", number_text(value)
        if isinstance(value, dict):
            items = [
                (f"{where}.{key_label(k)}" if where else key_label(k), v) for k, v in value.items()
            ]
            stack.extend(reversed(items))
        elif isinstance(value, list):
            stack.extend(reversed([(f"{where}[{i}]", v) for i, v in enumerate(value)]))
    return None


def key_label(key: object) -> str:
    """A key as a one-line message shows it: as written when printable, else its repr."""
    text = str(key)
    return text if text.isprintable() else repr(text)


def refuse_non_finite(data: Any, *, source: str, error: type[InputError] = InputError) -> None:
    """An InputError `source: field: must be a finite number, got nan` when `data` holds a
    non-finite float."""
    found = non_finite_field(data)
    if found is not None:
        raise error(f"{source}: {found[0]}: must be a finite number, got {found[1]}")


def _same(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


# Files of a model checkpoint folder: capcliff never writes one, even with --force (a report
# written over a checkpoint loses it). Weights by suffix (safetensors, PyTorch, GGUF, ONNX), and
# the JSON files HF model folders carry by name.
MODEL_FILE_SUFFIXES = (
    ".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".gguf", ".onnx", ".tiktoken",
    ".h5", ".msgpack", ".npz", ".model",  # TensorFlow, Flax, NumPy weights; SentencePiece
)  # fmt: skip
# the tokenizer's other files (BPE `vocab.json` + `merges.txt`, WordPiece `vocab.txt`; the
# SentencePiece `*.model` and `tokenizer.*` files go by suffix and prefix), the processor's and
# chat template's, Mistral's `params.json`
MODEL_FILE_NAMES = (
    "config.json", "generation_config.json", "hf_quant_config.json",
    "tokenizer_config.json", "special_tokens_map.json", "model.safetensors.index.json",
    "pytorch_model.bin.index.json", "vocab.json",
    "merges.txt", "vocab.txt", "added_tokens.json", "preprocessor_config.json",
    "processor_config.json", "chat_template.jinja", "chat_template.json", "params.json",
    "quantize_config.json", "quant_config.json", "adapter_config.json",  # AutoGPTQ, AutoAWQ, PEFT
    "tekken.json",  # Mistral
)  # fmt: skip


def is_model_file(path: Path) -> bool:
    """Whether `path` names a model checkpoint's file (weights, config.json, tokenizer)."""
    name = path.name.lower()
    # tokenizer.*: Mistral's tokenizer.model.v3 and the like
    return (
        name.endswith(MODEL_FILE_SUFFIXES)
        or name in MODEL_FILE_NAMES
        or name.startswith("tokenizer.")
    )


# Folders of the system's devices and streams: a path under them (or a link that leads there)
# is never a file an output may be renamed over.
_SYSTEM_FOLDERS = ("/dev", "/proc")


def _system_path(path: Path) -> bool:
    """Whether `path`, as written or where its links lead, lies under /dev or /proc
    (`/dev/stdout`, `/dev/fd/1`, `/proc/self/fd/1`)."""
    return any(
        where == folder or where.startswith(folder + "/")
        for where in (os.path.abspath(path), os.path.realpath(path))
        for folder in _SYSTEM_FOLDERS
    )


def check_outputs(
    outputs: Iterable[tuple[str, Path | None]], *, inputs: Iterable[Path], force: bool
) -> None:
    """Refuse, before any work, an output path (flag, path; None: not asked for) that would
    lose a file: an input of the same run or a model checkpoint's file (even with --force),
    another output's path, an existing file without `force`, a directory, a device, pipe or
    socket (`/dev/null`, which the rename would replace), or a folder that does not exist."""
    given = [(flag, path) for flag, path in outputs if path is not None]
    read = [p for p in inputs if p is not None]
    seen: dict[Path, str] = {}
    for flag, path in given:
        # the real path: two spellings through a symlinked folder, or a link to the other
        # output, name one file, and the second write replaced the first
        key = Path(os.path.realpath(path))
        if key in seen:
            raise InputError(f"{flag}: {path} is also the path of {seen[key]}; give each its own")
        seen[key] = flag
        if any(Path(os.path.realpath(i)) == key or _same(i, path) for i in read):
            raise InputError(f"{flag}: {path} is an input of this run; write elsewhere")
        if is_model_file(path):
            raise InputError(
                f"{flag}: {path} is a model checkpoint's file name (weights, config.json, "
                "tokenizer); capcliff never writes one, even with --force; write elsewhere"
            )
        if path.is_dir():
            raise InputError(f"{flag}: {path} is a directory; give a file path")
        if _system_path(path):  # /dev/stdout with stdout a file: the rename replaced the link
            raise InputError(
                f"{flag}: {path} is under /dev or /proc (a device or a stream); capcliff writes "
                "a file whole by renaming over it; give a file path"
            )
        if path.exists() and not path.is_file():  # --force renamed a file over /dev/null itself
            raise InputError(
                f"{flag}: {path} is a device, pipe or socket, not a file; capcliff writes a file "
                "whole by renaming over it; give a file path"
            )
        if path.exists() and not force:
            raise InputError(f"{flag}: {path} exists; pass --force to replace it")
        parent = path.parent if str(path.parent) else Path(".")
        if not parent.is_dir():
            raise InputError(f"{flag}: the folder {parent} does not exist")


def output_path(text: str | None, *, flag: str) -> Path | None:
    """An output flag's path (None: not asked for). A trailing separator names a folder, which
    Path drops (`--junit out/` wrote a file named `out`): an InputError."""
    if text is None:
        return None
    if not text.strip():  # `--junit " "` (an unset shell variable, quoted) wrote a file named " "
        raise InputError(f"{flag}: {text!r} is blank; give a file name")
    if text.strip() == "-":  # the usual name of standard output: a file named "-" was written
        raise InputError(f"{flag}: '-' is standard output by custom; give a file name")
    if "\0" in text:  # no file name holds one: os.stat's "embedded null byte" escaped as exit 4
        raise InputError(f"{flag}: {text!r:.60} holds a NUL byte; give a file name")
    if text.endswith(("/", os.sep)):
        raise InputError(f"{flag}: {text} ends in a separator, which names a folder; give a file")
    return Path(text)


def write_text_atomic(path: Path, text: str, *, overwrite: bool) -> None:
    """Write `text` to `path` atomically (see `write_bytes_atomic`)."""
    write_bytes_atomic(path, text.encode("utf-8"), overwrite=overwrite)


def write_bytes_atomic(path: Path, data: bytes, *, overwrite: bool) -> None:
    """Write `data` to `path` via a temporary file and a rename: a reader never sees half a file.

    An existing file is kept unless `overwrite` is set.
    """
    if is_model_file(path):
        raise InputError(f"output: {path} is a model checkpoint's file; capcliff never writes one")
    if _system_path(path):
        raise InputError(f"output: {path} is under /dev or /proc; give a file path")
    if path.exists() and not overwrite:
        raise InputError(f"output: {path} exists; pass --force to replace it")
    directory = path.parent if str(path.parent) else Path(".")
    tmp = None
    try:
        # the name cut short in the temporary file's: a 250-byte name is a file name, but
        # with a dot, 8 random characters and ".tmp" around it, it was past the 255 bytes one
        # may have (the run refused to write after it had run)
        prefix = f".{path.name[:100]}."
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=prefix, suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the file the usual mode
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        raise InputError(f"output: cannot write {path}: {exc.strerror}") from None
