"""The read path's JSON decoder: orjson's speed, the standard library's exactness."""

from __future__ import annotations

import json

import pytest

from kg.json_text import decode_json


@pytest.mark.parametrize(
    "text",
    [
        '{"big": 1180591620717411303424}',  # 2**70 in an object: orjson would round it
        '{"long": [1180591620717411303424, -18446744073709551617]}',  # in an array, negative
        "1180591620717411303424",  # the whole text one number
        "-18446744073709551617",
    ],
)
def test_integers_beyond_64_bits_come_back_exact(text: str) -> None:
    value = decode_json(text)
    assert value == json.loads(text)
    assert json.dumps(value) == text  # no float anywhere: a rounded one would print 1.18e+21


def test_ordinary_documents_decode_as_the_standard_library_does() -> None:
    text = (
        '{"a": 1, "b": [0.25, -3, null, true], "c": {"d": "12345678901234567890 digits in '
        'a string", "e": "3f2a9c0e1b7d4f5a6c8e9d0b1a2c3e4f5a6b7c8d9e0f1a2b"}, '
        '"f": 9223372036854775807}'
    )
    assert decode_json(text) == json.loads(text)
