"""The YAML files engine command lines name, read as the engines read them.

`vllm serve --config FILE` (vllm/utils/argparse_utils.py FlexibleArgumentParser) and
`trtllm-serve --config/--extra_llm_api_options FILE` (tensorrt_llm/commands/serve.py at 00209af)
load their file with PyYAML's `yaml.safe_load` and want a mapping of option names. The files
their recipes ship are block mappings of scalars, nested one or two levels (`kv_cache_config:`
then `  free_gpu_memory_fraction: 0.8`), with flow mappings and lists (`{dtype: fp8}`,
`[1, 2, 4]`) and comments. `read_mapping` reads that subset with YAML 1.1's scalars as
`safe_load` resolves them (`true`/`yes`/`on` are booleans, `0.8` a float, `1e-3` a string, a
later duplicate key wins); anything else (anchors, block scalars, tabs in indentation, which
PyYAML refuses too) is a one-line error naming the line, never a guess.
"""

from __future__ import annotations

import json
import re
from typing import Any

from capcliff.errors import InputError

# YAML 1.1's implicit scalars as PyYAML's resolver (yaml/resolver.py) reads them
_NULL = frozenset({"", "~", "null", "Null", "NULL"})
_TRUE = frozenset({"yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"})
_FALSE = frozenset({"no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"})
_INT = re.compile(r"[-+]?(?:0|[1-9][0-9_]*)")
_BASED_INT = {2: re.compile(r"[-+]?0b[01_]+"), 8: re.compile(r"[-+]?0[0-7_]+"),
              16: re.compile(r"[-+]?0x[0-9a-fA-F_]+")}  # fmt: skip
_SEXAGESIMAL = re.compile(r"[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+")
_FLOAT = re.compile(r"[-+]?(?:[0-9][0-9_]*)?\.[0-9_]*(?:[eE][-+][0-9]+)?")
_SPECIAL_FLOAT = {".inf": float("inf"), "+.inf": float("inf"), "-.inf": float("-inf"),
                  ".nan": float("nan")}  # fmt: skip
_KEY = re.compile(r"([^\s:#'\"{}\[\],&*!|>][^:#]*?|'[^']*'|\"[^\"]*\")\s*:(?:\s+|$)")
# YAML's indicators that start a construct outside the subset read here
_UNREAD = ("&", "*", "!", "|", ">", "? ", "%", "@", "`")


def scalar(text: str) -> Any:
    """One plain or quoted YAML scalar as `yaml.safe_load` resolves it."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1].replace("''", "'")
    if len(text) >= 2 and text[0] == text[-1] == '"':
        try:
            return json.loads(text)
        except ValueError:
            return text[1:-1]
    if text in _NULL:
        return None
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    return _number(text)


def _number(text: str) -> Any:
    """A plain scalar that may be YAML 1.1's int (decimal, 0b, octal 0..., 0x, base 60) or float;
    else the text itself."""
    if _INT.fullmatch(text):
        return int(text.replace("_", ""))
    for base, pattern in _BASED_INT.items():
        if pattern.fullmatch(text):
            return int(text.replace("_", "").replace("0b", "").replace("0x", ""), base)
    if _SEXAGESIMAL.fullmatch(text):  # YAML 1.1's base 60: 1:30 is 90
        sign, digits = (-1, text[1:]) if text[0] == "-" else (1, text.lstrip("+"))
        total = 0
        for part in digits.replace("_", "").split(":"):
            total = total * 60 + int(part)
        return sign * total
    if _FLOAT.fullmatch(text) and any(c.isdigit() for c in text):
        return float(text.replace("_", ""))
    return _SPECIAL_FLOAT.get(text.lower(), text)


def _uncommented(line: str) -> str:
    """`line` less a ` # comment` outside quotes."""
    quote = ""
    for i, char in enumerate(line):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i].rstrip()
    return line.rstrip()


def _split_flow(body: str) -> list[str]:
    """The items of a flow collection's body, split at commas outside quotes."""
    items, quote, start = [], "", 0
    for i, char in enumerate(body):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "{}[]":
            raise ValueError("a flow collection inside another")
        elif char == ",":
            items.append(body[start:i])
            start = i + 1
    items.append(body[start:])
    return [item.strip() for item in items if item.strip()]


def _value(text: str) -> Any:
    """A value after `key:`: a flow mapping, a flow list or a scalar."""
    if text.startswith(_UNREAD):
        raise ValueError(f"{text[:1]!r} (an anchor, alias, tag or block scalar)")
    if text.startswith("{") and text.endswith("}"):
        pairs = [_KEY.match(item + " ") for item in _split_flow(text[1:-1])]
        if not all(pairs):
            raise ValueError("a flow mapping item that is not `key: value`")
        return {
            scalar(m.group(1)): scalar((item + " ")[m.end() :])
            for m, item in zip(pairs, _split_flow(text[1:-1]), strict=True)
            if m is not None
        }
    if text.startswith("[") and text.endswith("]"):
        return [scalar(item) for item in _split_flow(text[1:-1])]
    if text.startswith(("{", "[")):
        raise ValueError("a flow collection over several lines")
    return scalar(text)


Frame = list[Any]  # [indent of its keys, the mapping, the last key given no value inline]


def _parse(lines: list[str]) -> dict[Any, Any]:
    """The mapping of a document's lines."""
    root: dict[Any, Any] = {}
    frames: list[Frame] = []
    for number, line in enumerate(lines, start=1):
        text = _uncommented(line)
        if not text.strip() or text.strip() in ("---", "..."):
            continue
        body = text.lstrip(" ")
        if body.startswith("\t"):
            raise InputError(f"line {number}: a tab in the indentation (YAML allows spaces only)")
        if not frames:
            frames.append([len(text) - len(body), root, None])
        try:
            _line(frames, len(text) - len(body), body)
        except ValueError as exc:
            raise InputError(f"line {number}: {exc}") from None
    return root


def _line(frames: list[Frame], indent: int, body: str) -> None:
    """One line into the mappings `frames` is building."""
    if body == "-" or body.startswith("- "):
        _item(frames, indent, body[1:].strip())
        return
    match = _KEY.match(body + " ")
    if match is None:
        raise ValueError(f"{body[:40]!r} is not `key: value`")
    key, rest = scalar(match.group(1)), (body + " ")[match.end() :].strip()
    top = frames[-1]
    if top[2] is not None and indent > top[0] and top[1][top[2]] is None:
        nested: dict[Any, Any] = {}  # the first key of the open key's mapping
        top[1][top[2]] = nested
        frames.append([indent, nested, None])
    else:
        while len(frames) > 1 and indent < frames[-1][0]:
            frames.pop()
        if indent != frames[-1][0]:
            raise ValueError("an indentation that matches no mapping above")
    top = frames[-1]
    top[1][key] = _value(rest) if rest else None
    top[2] = None if rest else key


def _item(frames: list[Frame], indent: int, text: str) -> None:
    """A `- item` of the block list of the last key given no value inline."""
    while len(frames) > 1 and indent < frames[-1][0]:
        frames.pop()
    top = frames[-1]
    if top[2] is None or indent < top[0]:
        raise ValueError("a list item where a `key:` was expected")
    if _KEY.match(text + " ") is not None:
        raise ValueError("a list of mappings")
    items = top[1][top[2]]
    if items is None:
        items = top[1][top[2]] = []
    if not isinstance(items, list):
        raise ValueError("a list item after a mapping")
    items.append(_value(text))


def read_mapping(text: str) -> dict[Any, Any]:
    """The mapping a YAML file of the subset above holds; an empty file, a list, a scalar or
    a construct outside the subset is an InputError (`line N: ...` where one line is at fault).
    """
    if all(not _uncommented(line).strip() for line in text.splitlines()):
        raise InputError("empty: the engine wants a mapping of option names")
    return _parse(text.splitlines())
