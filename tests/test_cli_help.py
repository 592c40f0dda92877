"""Every command's and subcommand's help fits 80 columns, is plain text (no reStructuredText
markup) and explains every option."""

from __future__ import annotations

import argparse

import pytest

from topocast.cli.main import build_parser


def _parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ("topocast",)):
    yield " ".join(path), parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, (*path, name))


def _all_parsers():
    return list(_parsers(build_parser()))


def test_the_walk_reaches_every_command():
    names = {name for name, _ in _all_parsers()}
    for expected in (
        "topocast run",
        "topocast topology convert",
        "topocast redistribute plan",
        "topocast testbed down",
    ):
        assert expected in names
    assert len(names) > 25


@pytest.mark.parametrize("name, parser", _all_parsers(), ids=lambda x: x if isinstance(x, str) else "")
def test_help_fits_80_columns_in_plain_text(monkeypatch, name, parser):
    monkeypatch.setenv("COLUMNS", "80")
    text = parser.format_help()
    long = [line for line in text.splitlines() if len(line) > 80]
    assert not long, f"{name}: lines over 80 columns: {long}"
    assert "``" not in text, f"{name}: reStructuredText markup in the help"


@pytest.mark.parametrize("name, parser", _all_parsers(), ids=lambda x: x if isinstance(x, str) else "")
def test_every_option_has_help(name, parser):
    silent = [
        a.option_strings or a.dest
        for a in parser._actions
        if not a.help and not isinstance(a, (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction))
    ]
    assert not silent, f"{name}: options without help: {silent}"
