"""A copy of a simulation's state that runs on apart from the original (`state_copy`).

`copy.deepcopy` copies a list of numbers one number at a time; a replica's state holds dozens of
lists with an entry per request, and a closed loop copies each replica once a round
(`resume.ResumedRounds`), so this copies such a list whole, once its class's attribute was seen
to hold numbers only (`_FLAT`: the loop's per-request lists are typed `list[int]` or
`list[float]`). Frozen dataclasses (the step-time model, the KV capacity, the engine settings,
the admission rule, the requests) and functions are shared: nothing changes them.
"""

from __future__ import annotations

import copy
import dataclasses
import types
from array import array
from collections import deque
from collections.abc import Iterable
from functools import partial
from typing import Any

import numpy as np

_ATOMIC = frozenset({int, float, bool, str, bytes, type(None), complex})
_SHARED = (types.FunctionType, types.BuiltinFunctionType, type, types.ModuleType)
_FLAT: set[tuple[type, str]] = set()  # (class, attribute): a list that only ever holds atoms


def _atoms(values: Iterable[Any]) -> bool:
    """Whether every value is a number, a string or None (in C: no Python call per value)."""
    return _ATOMIC.issuperset(map(type, values))


def state_copy(state: Any) -> Any:
    """A copy of a replica's state that no later step of either changes in the other: its own
    objects and containers copied, frozen dataclasses (model, capacity, config, rule, requests)
    and functions shared, references between its parts kept (as `copy.deepcopy`, in a small
    part of its time: a list of numbers is copied whole)."""
    return _copy(state, {})


def _copy(x: Any, memo: dict[int, Any]) -> Any:  # noqa: C901 - one branch per kind of value
    kind = type(x)
    if kind in _ATOMIC:
        return x
    if id(x) in memo:
        return memo[id(x)]
    if (kind is list or kind is deque) and _atoms(x):
        flat: Any = kind(x)  # the common case first: a queue or a list of numbers
        memo[id(x)] = flat
        return flat
    if isinstance(x, _SHARED):
        return x
    if dataclasses.is_dataclass(x) and kind.__dataclass_params__.frozen:
        return x
    made: Any
    if kind is list or kind is deque:
        made = kind(_copy(v, memo) for v in x)
    elif kind is tuple:
        if _atoms(x):
            return x
        made = tuple(_copy(v, memo) for v in x)
    elif kind is dict:
        made = x.copy() if _atoms(x.values()) else {k: _copy(v, memo) for k, v in x.items()}
    elif kind is set or kind is frozenset:
        made = kind(x)  # members are hashable, so immutable here
    elif kind is np.ndarray or kind is array:
        made = x.copy() if kind is np.ndarray else array(x.typecode, x)
    elif kind is types.MethodType:
        made = types.MethodType(x.__func__, _copy(x.__self__, memo))
    elif kind is partial:
        made = partial(_copy(x.func, memo), *_copy(x.args, memo), **_copy(x.keywords, memo))
    elif hasattr(x, "__dict__"):
        made = copy.copy(x)
        memo[id(x)] = made
        fields = made.__dict__
        for name, value in x.__dict__.items():
            if type(value) is list and (kind, name) in _FLAT:
                shared = memo.get(id(value))  # another part holds the same list
                if shared is None:
                    shared = memo[id(value)] = value.copy()
                fields[name] = shared
            else:
                fields[name] = _copy(value, memo)
                if type(value) is list and len(value) > 64 and _atoms(value):
                    _FLAT.add((kind, name))  # a typed list[int] or list[float]: stays so
        return made
    else:
        return copy.deepcopy(x, memo)
    memo[id(x)] = made
    return made
