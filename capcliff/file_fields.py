"""A pydantic rule for numbers read from a user's TOML or JSON file: `true` is not a number.

Pydantic's lax mode reads a boolean as 1 or 0 wherever a number is wanted, so
`tpot_p99_max_s = true` became a 1 s limit and `isl = true` one token. Models read from files
(check specs, calibration files, deployment settings) call `refuse_bool_number` from a
`field_validator("*", mode="before")`; a field that itself takes a boolean keeps it.
"""

from __future__ import annotations

import typing
from typing import Any

from pydantic import BaseModel, ValidationInfo


def _admits(annotation: Any, kinds: tuple[type, ...]) -> bool:
    """Whether `annotation` (unions and Annotated unwrapped) takes one of `kinds`."""
    if annotation in kinds:
        return True
    return any(_admits(arg, kinds) for arg in typing.get_args(annotation))


def refuse_bool_number(model: type[BaseModel], value: Any, info: ValidationInfo) -> Any:
    """`value`, or a ValueError when it is a boolean given to a number field of `model`."""
    if not isinstance(value, bool) or info.field_name is None:
        return value
    annotation = model.model_fields[info.field_name].annotation
    if _admits(annotation, (int, float)) and not _admits(annotation, (bool,)):
        raise ValueError(f"must be a number, got {str(value).lower()}")
    return value
