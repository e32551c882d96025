"""`hf-skillfollow` command line. Subcommands live in their own modules and load lazily."""

from __future__ import annotations

import os

import click

from hf_skillfollow._lazy import LazyRegistry
from hf_skillfollow._version import __version__

#: subcommand -> ("module:attr", one-line help)
_COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("hf_skillfollow.cli._run:run", "Run a paired SE/SD evaluation against a model."),
    "sweep": (
        "hf_skillfollow.cli._sweep:sweep",
        "Run every cell of a sweep file (a model panel), resumable, sharded, on Ray.",
    ),
    "score": ("hf_skillfollow.cli._score:score", "Score EvalPlus-format samples in the sandbox."),
    "report": ("hf_skillfollow.cli._report:report", "Compute the paired metrics from transitions."),
    "skills": (
        "hf_skillfollow.cli._skills:skills",
        "List, show, validate, search and export skill pools.",
    ),
    "annotate": (
        "hf_skillfollow.cli._annotate:annotate",
        "Label why retrieval helped or hurt (blinded LLM), and audit the labels.",
    ),
    "tasks": (
        "hf_skillfollow.cli._tasks:tasks",
        "Work with your own task files: export the tests tasks as Harbor tasks.",
    ),
    "import": (
        "hf_skillfollow.cli._import:import_",
        "Import with/without-skills runs of Harbor, skill-creator or BenchFlow as run folders.",
    ),
    "push": ("hf_skillfollow.cli._push:push", "Publish run directories to a Hub dataset repo."),
    "verify": (
        "hf_skillfollow.cli._verify:verify",
        "Re-score published answers and compare with the recorded bits.",
    ),
    "space": (
        "hf_skillfollow.cli._space:space",
        "Build or deploy the leaderboard as a Hugging Face Space.",
    ),
    "leaderboard": (
        "hf_skillfollow.cli._leaderboard:leaderboard",
        "Launch the leaderboard app locally.",
    ),
}
_LOADERS = LazyRegistry("command", {name: target for name, (target, _) in _COMMANDS.items()})


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return _LOADERS.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Help must not import every subcommand (and its dependencies) just to list them.
        with formatter.section("Commands"):
            formatter.write_dl([(name, spec[1]) for name, spec in sorted(_COMMANDS.items())])

    def invoke(self, ctx: click.Context) -> object:
        # Error lines quote file names, ids and messages from untrusted sources: their control
        # characters and escape sequences are shown as text, never sent to the terminal raw.
        try:
            return super().invoke(ctx)
        except click.ClickException as exc:
            from hf_skillfollow._escape import visible_controls

            exc.message = visible_controls(exc.message, keep="\n")
            raise


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="hf-skillfollow")
def cli() -> None:
    """Does retrieving a skill help on the tasks where the agent retrieved one? Measure it paired."""


def main() -> None:
    # Inherited by every Python started from here on, a library's too (vLLM's engine process,
    # spawned on a GPU): the current folder, maybe a downloaded benchmark, is never first on
    # its import path (the toolkit's own spawns also pass -P).
    os.environ["PYTHONSAFEPATH"] = "1"
    cli()
