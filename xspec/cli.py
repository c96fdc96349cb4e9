"""The ``xspec`` command line."""

from __future__ import annotations

import importlib

import click

from xspec import __version__

# Every subcommand, by the module that defines it (xspec/commands/), imported only
# when used: some of those modules pull in z3, networkx or hypothesis, and a
# ``replay`` or a ``check`` should not wait a second for them.
_MODULE_COMMANDS = {
    "audit": "xspec.commands.audit:audit_command",
    "check": "xspec.commands.check:check_command",
    "dialects": "xspec.commands.dialects:dialects_command",
    "explain": "xspec.commands.explain:explain_command",
    "explore": "xspec.commands.explore:explore_command",
    "fuzz": "xspec.commands.fuzz:fuzz_command",
    "prove": "xspec.commands.prove:prove_command",
    "record": "xspec.commands.record:record_command",
    "record-corpus": "xspec.commands.record_corpus:record_corpus_command",
    "record-cluster": "xspec.commands.record_cluster:record_cluster_command",
    "replay": "xspec.commands.replay:replay_command",
    "rules": "xspec.commands.rules:rules_command",
    "sentinel": "xspec.commands.sentinel:sentinel_command",
    "serve": "xspec.commands.serve:serve_command",
    "view": "xspec.commands.view:view_command",
    "workload": "xspec.commands.workload:workload_command",
}


class _LazyGroup(click.Group):
    """A group whose commands from ``_MODULE_COMMANDS`` are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *_MODULE_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in _MODULE_COMMANDS:
            module, attr = _MODULE_COMMANDS[cmd_name].split(":")
            command = getattr(importlib.import_module(module), attr)
            if command.name != cmd_name:
                raise RuntimeError(f"{_MODULE_COMMANDS[cmd_name]} is named {command.name!r}, not {cmd_name!r}")
            self.add_command(command)
        return self.commands.get(cmd_name)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="xspec")
def main() -> None:
    """xspec: the executable formal specification of Redis Streams and consumer groups."""

