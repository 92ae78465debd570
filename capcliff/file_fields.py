"""A pydantic rule for numbers read from a user's TOML or JSON file: `true` is not a number, nor
is `"128"`, and `1` or `"yes"` is not a boolean.

Pydantic's lax mode reads a boolean as 1 or 0 wherever a number is wanted, so
`tpot_p99_max_s = true` became a 1 s limit and `isl = true` one token; it reads text that holds
a number as the number and `1`, `"yes"` or `"on"` as true. Models read from files
(check specs, calibration files, deployment settings) call `refuse_bool_number` from a
`field_validator("*", mode="before")`; a field that itself takes a boolean keeps it.
"""

from __future__ import annotations

import typing
from typing import Any

from pydantic import BaseModel, BeforeValidator, PlainValidator, ValidationInfo


def _admits(annotation: Any, kinds: tuple[type, ...]) -> bool:
    """Whether `annotation` (unions and Annotated unwrapped) takes one of `kinds`."""
    if annotation in kinds:
        return True
    return any(_admits(arg, kinds) for arg in typing.get_args(annotation))


def _reads_text(annotation: Any, metadata: list[Any]) -> bool:
    """Whether a field parses text itself (a BeforeValidator, as ByteCount's `"4GiB"`)."""
    if any(isinstance(m, BeforeValidator | PlainValidator) for m in metadata):
        return True
    return any(
        _reads_text(arg, list(getattr(arg, "__metadata__", ())))
        for arg in typing.get_args(annotation)
    )


def refuse_bool_number(model: type[BaseModel], value: Any, info: ValidationInfo) -> Any:
    """`value`, or a ValueError when it is a boolean given to a number field of `model`, text
    given to a number field that does not parse text itself (`isl = "128"`), or anything but a
    boolean given to a boolean field (`fits = "yes"` and `fits = 1` read as true)."""
    if info.field_name is None:
        return value
    field = model.model_fields[info.field_name]
    annotation = field.annotation
    number = _admits(annotation, (int, float))
    flag = _admits(annotation, (bool,))
    text = _admits(annotation, (str,)) or _reads_text(annotation, field.metadata)
    if isinstance(value, bool) and number and not flag:
        raise ValueError(f"must be a number, got {str(value).lower()}")
    if isinstance(value, str) and number and not text:
        raise ValueError(f"must be a number, not text, got {value!r:.40}")
    if not isinstance(value, bool) and value is not None and flag and not (number or text):
        raise ValueError(f"must be true or false, got {value!r:.40}")
    return value
