"""Validation problems as one line each: `field.path: message`, with the nearest valid key for
an unknown one. Used by the check spec and the check report."""

from __future__ import annotations

import difflib
import re
from typing import Any, get_args

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

_FIELD_PREFIX = re.compile(r"^([A-Za-z_][\w.\[\]]*): (.*)$", flags=re.DOTALL)


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next((m for a in get_args(annotation) if (m := _model_in(a)) is not None), None)


def _keys_at(root: type[BaseModel], loc: tuple[int | str, ...]) -> list[str]:
    """The valid keys of the table at `loc` (list indices skipped)."""
    model: type[BaseModel] | None = root
    for part in loc:
        if isinstance(part, str) and model is not None:
            found = model.model_fields.get(part)
            model = None if found is None else _model_in(found.annotation)
    return list(model.model_fields) if model is not None else []


def location(loc: tuple[int | str, ...]) -> str:
    """`("scenario", 0, "expect", "fits")` -> `scenario[0].expect.fits`."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def nearest_key(key: str, valid: list[str]) -> str | None:
    """The valid key `key` most likely meant: the closest spelling, else one it contains or
    that contains it (the longest). Keys are lower case: `MODEL` means model."""
    folded = [v for v in valid if v.lower() == key.lower()]
    if folded:
        return folded[0]
    close = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
    if close:
        return close[0]
    inside = [v for v in valid if v in key or key in v]
    return max(inside, key=len) if inside else None


def _unknown_key(root: type[BaseModel], loc: tuple[int | str, ...]) -> str:
    valid = _keys_at(root, loc[:-1])
    near = nearest_key(str(loc[-1]), valid)
    if near is not None:
        return f"unknown key; did you mean {near}?"
    return f"unknown key; valid: {', '.join(valid)}"


def _problem(root: type[BaseModel], error: ErrorDetails) -> str:
    """One pydantic error as `field.path: message`."""
    loc = tuple(error["loc"])
    if error["type"] == "extra_forbidden":
        return f"{location(loc)}: {_unknown_key(root, loc)}"
    return field_line(location(loc), error["msg"].removeprefix("Value error, "))


def field_line(where: str, message: str) -> str:
    """`where: message`, or `where.field: rest` when the message starts by naming a field."""
    match = _FIELD_PREFIX.match(message)
    if match:
        sub, message = match.groups()
        where = f"{where}.{sub}" if where else sub
    return f"{where or '(file)'}: {message}"


def validation_lines(
    root: type[BaseModel], data: Any, *, context: dict[str, Any] | None = None
) -> list[str]:
    """Every problem of `data` against `root` (validated with `context`), one
    `field.path: message` each ([] if none)."""
    try:
        root.model_validate(data, context=context)
    except ValidationError as exc:
        errors = exc.errors()
    else:
        return []
    # a required key given in the wrong case (`Name`): its "unknown key; did you mean name?"
    # says all; a second line saying name is missing only repeats it
    miscased = {
        (tuple(e["loc"][:-1]), str(e["loc"][-1]).lower())
        for e in errors
        if e["type"] == "extra_forbidden" and e["loc"]
    }
    return [
        _problem(root, e)
        for e in errors
        if not (e["type"] == "missing" and (tuple(e["loc"][:-1]), str(e["loc"][-1])) in miscased)
    ]
