"""Entry point: wires the command modules onto the app and maps errors to exit codes."""

from __future__ import annotations

import errno
import gc
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager

import typer
from typer.models import CommandInfo

from capcliff.cli import analysis, checks, memory, planning  # noqa: F401  (registers the commands)
from capcliff.cli.app import EXIT_INPUT, EXIT_INTERNAL, app
from capcliff.errors import CapcliffError

# A run builds a long-lived heap as it imports (numpy, pydantic's schemas, the catalogs: about 100k
# objects) and frees nearly all it allocates afterwards by reference counting. At CPython's default
# thresholds (700, 10, 10) the collector ran 150 times in a batch plan and walked that heap in
# 13 of them: about 0.08 s of its 1 s. Collecting every 100k net allocations instead runs it
# about once (peak memory unchanged: 66 MB for the batch plan, 81 MB for the online one).
GC_THRESHOLDS = (100_000, 10, 10)


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app; domain and usage errors become one line on stderr, exit 2. The
    cyclic collector runs at `GC_THRESHOLDS` meanwhile (restored after). Run as the program
    (`argv` None), the heap is frozen at the end: the process exits next, and the collection
    at interpreter exit walked all of it (about 0.06 s of a 0.65 s batch plan) to free what the
    exit frees anyway."""
    _replace_unencodable()
    before = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        return _run(argv)
    finally:
        gc.set_threshold(*before)
        if argv is None:
            gc.freeze()


@contextmanager
def _invoked_command_only(args: list[str]) -> Iterator[None]:
    """Register only the command `args` names first, for the run: typer turns every registered
    command into a click command on every run (2 to 3 ms each, 17 ms for the app's seven), and
    a run that names its command prints what it would with all of them (its help, usage and
    errors are its own). Anything else (no command, an option first, an unknown name) runs
    with every command."""
    every = app.registered_commands
    named = [c for c in every if args and _command_name(c) == args[0]]
    if len(named) != 1:
        yield
        return
    app.registered_commands = named
    try:
        yield
    finally:
        app.registered_commands = every


def _command_name(info: CommandInfo) -> str:
    """The name typer gives a registered command (typer.main.get_command_name's rule)."""
    callback = info.callback
    if info.name:
        return info.name
    return "" if callback is None else callback.__name__.lower().replace("_", "-")


def _replace_unencodable() -> None:
    """A stream whose encoding lacks the tables' box characters (`PYTHONIOENCODING=ascii`,
    `LC_ALL=C` without UTF-8 mode) writes `?` for them instead of failing the run with
    UnicodeEncodeError, an internal error, after the work was done."""
    for stream in (sys.stdout, sys.stderr):
        encoding = getattr(stream, "encoding", None) or "utf-8"
        reconfigure = getattr(stream, "reconfigure", None)
        try:
            "─→±".encode(encoding)
        except (UnicodeEncodeError, LookupError):
            if callable(reconfigure):
                reconfigure(errors="replace")


def _run(argv: list[str] | None) -> int:
    try:
        with _invoked_command_only(sys.argv[1:] if argv is None else argv):
            code = app(args=argv, prog_name="capcliff", standalone_mode=False)
    except CapcliffError as exc:
        for line in str(exc).splitlines() or [type(exc).__name__]:
            typer.echo(f"error: {clipped(line)}", err=True)
        return EXIT_INPUT
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except typer.Abort:
        typer.echo("Aborted!", err=True)
        return 1
    except OSError as exc:
        if exc.errno in FULL_ERRNOS:  # a file output says so itself (`files.write_bytes_atomic`)
            where = "standard output" if exc.filename is None else f"{str(exc.filename)!r:.80}"
            typer.echo(f"error: output: cannot write {where}: {exc.strerror}", err=True)
            return EXIT_INPUT
        if exc.errno not in PATH_ERRNOS:
            traceback.print_exc(file=sys.stderr)
            return EXIT_INTERNAL
        # a path the system refuses before any file is opened, wherever a flag names one
        typer.echo(
            f"error: {str(exc.filename)!r:.80}: {exc.strerror}; give a shorter path", err=True
        )
        return EXIT_INPUT
    except Exception as exc:
        usage = _usage_error(exc)
        if usage is not None:
            return usage
        traceback.print_exc(file=sys.stderr)
        return EXIT_INTERNAL
    return code if isinstance(code, int) else 0  # typer.Exit(code) comes back as its code


# Set: the most characters an error line prints. A message quoting what was typed echoed it
# whole: `--offload cpu:` and 100,000 digits, a 100,000-character `--workload` or `--policy`, a
# 20,000-item `--spec-acceptance` each printed a line of 80-100 KB. A longer line keeps its
# start (the field) and its end (what would be valid) and says how much it left out.
MAX_ERROR_LINE_CHARS = 1000


def clipped(line: str) -> str:
    """`line`, or its first and last MAX_ERROR_LINE_CHARS / 2 - 40 characters around a note of
    how many were cut."""
    if len(line) <= MAX_ERROR_LINE_CHARS:
        return line
    keep = MAX_ERROR_LINE_CHARS // 2 - 40
    return f"{line[:keep]} [... {len(line) - 2 * keep:,} characters cut ...] {line[-keep:]}"


# A name past the system's limit (255 bytes a part, 4,096 in all): a usage slip, not a crash.
PATH_ERRNOS = (errno.ENAMETOOLONG,)
# The disk or quota where the output goes is full (`> /dev/full` too): the system's state, not a
# bug of capcliff's, said in one line.
FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)


def _usage_error(exc: Exception) -> int | None:
    """Print click's usage error `exc` (a bad flag value, an unknown option) as one line and
    give its exit code; None when `exc` is not one. Click's own display took three lines (Usage,
    Try, Error); `capcliff` alone still prints the help. Told by shape: typer 0.12-0.2x raise
    click's exceptions, later releases their own copies of them."""
    message, code = getattr(exc, "format_message", None), getattr(exc, "exit_code", None)
    if not callable(message) or not isinstance(code, int):
        return None
    show = getattr(exc, "show", None)
    if type(exc).__name__ == "NoArgsIsHelpError" and callable(show):
        show()
    else:
        typer.echo(f"error: {clipped(' '.join(str(message()).split()))}", err=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
