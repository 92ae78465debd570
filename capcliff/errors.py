"""The one exception hierarchy of capcliff. Only the CLI maps these to exit codes."""

from __future__ import annotations


class CapcliffError(Exception):
    """Base of every error capcliff raises on purpose."""


class InputError(CapcliffError):
    """Invalid user input: a flag, a file, a field (exit code 2). The message is one line."""


class CatalogError(InputError):
    """A catalog or config file that does not validate; the message reads `path: field: message`."""


class UnknownIdError(InputError):
    """An id that names no catalog entry; the message suggests the closest ids."""
