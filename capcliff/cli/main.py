"""Entry point: wires the command modules onto the app and maps errors to exit codes."""

from __future__ import annotations

import sys
import traceback

import typer

from capcliff.cli import analysis, checks, memory, planning  # noqa: F401  (registers the commands)
from capcliff.cli.app import EXIT_INPUT, EXIT_INTERNAL, app
from capcliff.errors import CapcliffError


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app; domain errors become one line on stderr and exit code 2."""
    try:
        app(args=argv, prog_name="capcliff")  # usage errors: click prints them, exits 2
    except CapcliffError as exc:
        for line in str(exc).splitlines() or [type(exc).__name__]:
            typer.echo(f"error: {line}", err=True)
        return EXIT_INPUT
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except Exception:
        traceback.print_exc(file=sys.stderr)
        return EXIT_INTERNAL
    return 0


if __name__ == "__main__":
    sys.exit(main())
