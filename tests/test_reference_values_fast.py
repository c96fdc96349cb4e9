"""The reference server's reply builders (reference/values.py) give the replies spec/resp.py's classes give."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xspec.reference.values import bulk_reply, int_reply
from xspec.spec.resp import Bulk, Int, encode


def _same(built: object, made: object) -> None:
    assert type(built) is type(made)
    assert built == made and hash(built) == hash(made) and repr(built) == repr(made)
    assert encode(built) == encode(made)  # type: ignore[arg-type]
    assert pickle.loads(pickle.dumps(built)) == made and copy.copy(built) == made
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.value = made.value  # type: ignore[attr-defined]


@given(st.integers(-(1 << 64), 1 << 64) | st.integers(-3, 2000))
def test_int_reply_is_int(n: int) -> None:
    _same(int_reply(n), Int(n))


@given(st.binary(max_size=40))
def test_bulk_reply_is_bulk(value: bytes) -> None:
    _same(bulk_reply(value), Bulk(value))
