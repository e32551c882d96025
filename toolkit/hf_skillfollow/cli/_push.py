"""`hf-skillfollow push RUN_DIR... --repo ORG/NAME`: publish runs to a Hub dataset repo."""

from __future__ import annotations

from pathlib import Path

import click

from hf_skillfollow.cli._echo import echo

# One --token option for every command that writes to the Hub (push, space push).
token_option = click.option(
    "--token",
    default=None,
    metavar="T",
    help="Hub token (default: HF_TOKEN or the cached `hf auth login`).",
)


@click.command("push")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--repo",
    "repo_id",
    required=True,
    metavar="ORG/NAME",
    help="Hub dataset repo id (created if missing).",
)
@click.option(
    "--private", is_flag=True, help="Create the repo as private (no effect on an existing repo)."
)
@token_option
@click.option(
    "--dry-run",
    "dry_run_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    metavar="DIR",
    help="Write the repo folder into DIR (extending what is there) and upload nothing.",
)
@click.option(
    "--space",
    default=None,
    metavar="ORG/NAME",
    help="Leaderboard Space the card links to (kept on later pushes until another is named).",
)
@click.option(
    "--license",
    "license_",
    default="cc-by-4.0",
    show_default=True,
    help="Licence in the card's metadata.",
)
def push(
    run_dirs: tuple[Path, ...],
    repo_id: str,
    private: bool,
    token: str | None,
    dry_run_dir: Path | None,
    space: str | None,
    license_: str,
) -> None:
    """Publish RUN_DIR(s) as new parquet files plus a regenerated card, in one commit.

    Pushing a run twice adds nothing; a run id already published with different rows is
    refused; nothing published is rewritten or deleted.
    """
    from hf_skillfollow.hub import HubError, push_runs
    from hf_skillfollow.schema import SchemaError

    try:
        result = push_runs(
            list(run_dirs),
            repo_id,
            private=private,
            token=token,
            dry_run_dir=dry_run_dir,
            license=license_,
            space=space,
        )
    except (HubError, SchemaError) as exc:
        raise click.ClickException(str(exc)) from None
    for line in summary_lines(result):
        echo(line)


def summary_lines(result) -> list[str]:  # noqa: ANN001 - PushResult, imported lazily
    verb = "wrote" if result.dry_run else "added"
    where = f"{result.target} (dry run, nothing uploaded)" if result.dry_run else result.target
    lines = [f"{result.repo_id}: {where}"]
    for path, rows in sorted(result.added.items()):
        lines.append(f"  {verb} {path} ({rows} rows)")
    for path in sorted(result.skipped):
        lines.append(f"  already published, identical: {path}")
    for path in result.stats_paths:
        lines.append(f"  {verb} {path} (counts the card is computed from)")
    lines.append(
        f"  {verb} README.md (card regenerated from all rows)"
        if result.card_updated
        else "  README.md unchanged"
    )
    if not result.changed:
        lines.append("  nothing new to add")
    if result.attempts > 1:
        lines.append(f"  committed on attempt {result.attempts} (other pushes landed first)")
    if result.commit_url:
        lines.append(f"  commit: {result.commit_url}")
    return lines
