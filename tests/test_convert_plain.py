"""The plain-JSON fast path of :mod:`flask_mcp.convert`: no copy, same answers as the table."""

from __future__ import annotations

import enum
import math
import typing as t
import uuid

import pytest

from flask_mcp import convert
from flask_mcp.content import json_text
from flask_mcp.json_codec import EncodedJSON
from flask_mcp.schema.output import OutputError
from flask_mcp.schema.output import OutputSpec

pytest.importorskip("orjson")


class Color(enum.Enum):
    RED = "red"


PLAIN = {"count": 2, "items": [{"id": 1, "tags": ["a"], "price": 1.5, "gone": None}, {"ok": True}]}


def test_plain_json_is_returned_uncopied_with_its_bytes() -> None:
    assert convert.to_json(PLAIN) is PLAIN
    encoded = convert.plain_json_bytes(PLAIN)
    assert encoded == (
        b'{"count":2,"items":[{"id":1,"tags":["a"],"price":1.5,"gone":null},{"ok":true}]}'
    )


@pytest.mark.parametrize(
    "value",
    [
        {"a": (1, 2)},
        {"a": [Color.RED]},
        {"a": {"b": uuid.UUID(int=7)}},
        {"a": {1: "x"}},
        {"a": [2**70]},
        {"a": "\ud800"},
        {"a": [{"b": {1, 2}}]},
    ],
)
def test_values_orjson_would_take_are_converted_by_the_table(value: dict[str, t.Any]) -> None:
    assert convert.plain_json_bytes(value) is None
    converted = convert.to_json(value)
    assert converted is not value and converted == convert._convert(value)


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf])
def test_non_finite_floats_are_refused_though_orjson_writes_null(number: float) -> None:
    value = {"a": [None, {"b": number}]}
    assert convert.plain_json_bytes(value) is None
    with pytest.raises(convert.Unconvertible, match=r"at 'a\[1\]\.b'"):
        convert.to_json(value)


def test_nested_subclasses_are_converted_to_the_base_types() -> None:
    class Name(str):
        pass

    value = {"a": [Name("x")]}
    converted = convert.to_json(value)
    assert type(converted["a"][0]) is str and converted == {"a": ["x"]}


def test_cycles_fail_as_before() -> None:
    loop: list[t.Any] = []
    loop.append(loop)
    assert convert.plain_json_bytes(loop) is None
    with pytest.raises(RecursionError):
        convert.to_json(loop)


def test_json_text_is_compact_with_or_without_orjson() -> None:
    assert json_text({"result": 3}) == '{"result":3}'
    assert json_text(PLAIN) == convert.plain_json_bytes(PLAIN).decode()  # type: ignore[union-attr]
    assert json_text({"a": "\ud800"}) == '{"a":"\ud800"}'  # the stdlib writes what orjson refuses


def test_structure_with_text_reuses_the_check_bytes_and_keeps_the_checks() -> None:
    spec = OutputSpec({"type": "object", "properties": {"count": {"type": "integer"}}})
    structured, text = spec.structure_with_text(PLAIN)
    assert structured == PLAIN and text == json_text(PLAIN)
    # not converted (a shallow copy), and it carries the bytes its answer is written with
    assert type(structured) is EncodedJSON and structured["items"] is PLAIN["items"]
    assert structured.json == text.encode()
    with pytest.raises(OutputError, match="count"):
        spec.structure_with_text({"count": "two"})
    with pytest.raises(OutputError, match="returned list"):
        spec.structure_with_text([1])
    wrapped = OutputSpec(
        {"type": "object", "properties": {"result": {"type": "array"}}, "required": ["result"]},
        wrapped=True,
    )
    assert wrapped.structure_with_text([1, (2, 3)]) == (
        {"result": [1, [2, 3]]},
        '{"result":[1,[2,3]]}',
    )
    assert wrapped.structure_with_text([1, 2]) == ({"result": [1, 2]}, '{"result":[1,2]}')
