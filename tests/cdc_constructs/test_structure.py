"""The library's units stay small enough to hold in one's head, and its modules import each
other without a cycle."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from cdc_constructs import StreamConsumer
from cdc_constructs.consumer_options import ConsumerOptions
from tests import structure

MODULES = structure.modules(Path(__file__).resolve().parents[2] / "cdc_constructs")


def test_no_function_is_over_60_lines():
    functions = structure.units(MODULES, (ast.FunctionDef, ast.AsyncFunctionDef))
    too_long = [u for u in functions if u[1] > structure.MAX_FUNCTION_LINES]
    assert not too_long, too_long


def test_no_class_is_over_200_lines():
    too_long = [
        u for u in structure.units(MODULES, ast.ClassDef) if u[1] > structure.MAX_CLASS_LINES
    ]
    assert not too_long, too_long


def test_no_import_cycle():
    cycle = structure.import_cycle(MODULES, "cdc_constructs")
    assert cycle is None, cycle


def test_every_stream_consumer_prop_belongs_to_one_concern():
    props = [
        name
        for name, parameter in inspect.signature(StreamConsumer.__init__).parameters.items()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY
    ]
    grouped = ConsumerOptions.prop_names()
    assert len(grouped) == len(set(grouped))
    source_props = {"table", "stream_view_type", "consumer_name", "members"}
    assert sorted(set(props) - source_props) == sorted(grouped)


@pytest.mark.parametrize("kind", [ast.FunctionDef, ast.ClassDef], ids=["function", "class"])
def test_report_the_largest_units(kind, capsys):
    with capsys.disabled():
        print(f"\nlargest {kind.__name__}s:", structure.units(MODULES, kind)[:3])
