"""kvplan.records: the frozen records that stand in for dataclasses on the check path behave as the dataclasses did."""

from __future__ import annotations

import copy
import pickle
from dataclasses import dataclass, field

import pytest

from kvplan.records import ComparedFigures, Figures


class Point(ComparedFigures):
    __slots__ = _fields = ("x", "y", "tags")
    _defaults = {"y": 0, "tags": ()}


@dataclass(frozen=True)
class DataPoint:  # the dataclass Point stands for, for comparison
    x: int
    y: int = 0
    tags: tuple = ()


class Memoized(Figures):  # as Basis: a memo made for each record, left out of the repr
    __slots__ = _fields = ("x", "memo")
    _factories = {"memo": dict}
    _hidden = ("memo",)


@dataclass(frozen=True, eq=False)
class DataMemoized:
    x: int
    memo: dict = field(default_factory=dict, repr=False)


class Other(ComparedFigures):
    __slots__ = _fields = ("x",)


def test_fields_by_position_keyword_and_default():
    p = Point(1, tags=("a",))
    assert (p.x, p.y, p.tags) == (1, 0, ("a",))
    assert Memoized(1).memo == {} and Memoized(1).memo is not Memoized(1).memo  # made for each, as default_factory
    with pytest.raises(TypeError):
        Point()
    with pytest.raises(TypeError):
        Point(1, x=2)
    with pytest.raises(TypeError):
        Point(1, z=2)
    with pytest.raises(TypeError):
        Point(1, 2, (), {}, 5)


def test_repr_is_the_dataclass_repr():
    assert repr(Point(1, 2, ("a",))) == repr(DataPoint(1, 2, ("a",))).replace("DataPoint", "Point") == \
        "Point(x=1, y=2, tags=('a',))"
    assert repr(Memoized(1)) == repr(DataMemoized(1)).replace("DataMemoized", "Memoized") == "Memoized(x=1)"


def test_frozen():
    p = Point(1)
    with pytest.raises(AttributeError):
        p.x = 2
    with pytest.raises(AttributeError):
        del p.x


def test_equality_and_hash_by_fields_and_class():
    assert Point(1, 2) == Point(1, 2) and hash(Point(1, 2)) == hash(Point(1, 2)) and Point(1, 2) != Point(1, 3)
    assert Other(1) != Point(1) and len({Point(1, 2), Point(1, 2), Point(2)}) == 2
    nan = float("nan")
    assert Point(nan) == Point(nan)  # the same object compares equal inside a tuple, as in a dataclass's __eq__


def test_plain_figures_compare_by_identity():  # as a dataclass with eq=False
    a = Memoized(1)
    assert a == a and a != Memoized(1) and len({a, a, Memoized(1)}) == 2


def test_with_changes_as_dict_pickle_and_copy():
    p = Point(1, 2, ("a",))
    q = p.with_changes(y=5)
    assert (q.x, q.y, q.tags) == (1, 5, ("a",)) and p.y == 2
    assert p.as_dict() == {"x": 1, "y": 2, "tags": ("a",)}
    assert pickle.loads(pickle.dumps(p)) == p and copy.deepcopy(p) == p and copy.copy(p) == p
