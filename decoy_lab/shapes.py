"""The shape of a JSON value: does it fit what a reader expects, and how to name it in an error.

Used wherever a server answer is read (http.py, errors.py, the readers), so an answer of the
wrong shape is named the same way everywhere, and never printed: it may hold a secret.
"""

from __future__ import annotations

import math
import typing
from typing import Any, TypeGuard, TypeVar, overload

T = TypeVar("T")


@overload
def fits(value: object, shape: type[T]) -> TypeGuard[T]: ...
@overload
def fits(value: object, shape: Any) -> bool: ...
def fits(value: object, shape: Any) -> bool:
    """Whether a JSON value has `shape`: a type, a tuple of types, or list[shape]. `int` excludes
    booleans, and `float` means any finite number (a wait or a count can be used as it is)."""
    if typing.get_origin(shape) is list:
        (item,) = typing.get_args(shape)
        return isinstance(value, list) and all(fits(v, item) for v in value)
    if isinstance(shape, tuple):
        return any(fits(value, s) for s in shape)
    if isinstance(value, bool):
        return shape is bool
    if shape is float:
        try:
            return isinstance(value, (int, float)) and math.isfinite(value)
        except OverflowError:  # an integer too large for a float
            return False
    return isinstance(value, shape)


def json_kind(value: Any) -> str:
    """A JSON value's kind in words (never the value, which may hold a secret)."""
    for kind, name in (
        (type(None), "null"),
        (bool, "a boolean"),
        ((int, float), "a number"),
        (str, "text"),
        (list, "a list"),
        (dict, "an object"),
    ):
        if isinstance(value, kind):
            return name
    return type(value).__name__


def shape_name(shape: Any) -> str:
    if isinstance(shape, tuple):
        return " or ".join(map(shape_name, shape))
    names = {str: "text", int: "an integer", float: "a number", bool: "a boolean", dict: "an object", list: "a list"}
    return names.get(shape) or str(shape)
