"""The skeleton's plumbing: real server fixture, recorder, checker, CLI."""

from __future__ import annotations

import click
from click.testing import CliRunner

from xspec.cli import main


def test_unknown_command_matches_real_redis(redis):
    s = redis.scenario()
    s.call(1, "NOSUCH", "a", "b")
    s.call(1, "XGROUP", "FOO")
    s.call(1, "XGROUP")
    s.check()


def test_cli_help_on_every_subcommand():
    runner = CliRunner()
    names = main.list_commands(click.Context(main))
    assert {"check", "explore", "fuzz", "prove", "record", "replay", "serve"} <= set(names)
    for sub in [[], *([name] for name in names)]:
        r = runner.invoke(main, [*sub, "--help"])
        assert r.exit_code == 0, r.output
        assert "Usage:" in r.output
