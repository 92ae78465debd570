"""The command line: typer commands, rich renderers, exit codes. The only package that prints.

`app` holds the typer app, shared options and the exit codes; one module per command group
registers its commands on it; `main` wires them together and maps errors to exit codes.
May import: every other package; nothing imports it.
"""

from capcliff.cli.app import app
from capcliff.cli.main import main

__all__ = ["app", "main"]
