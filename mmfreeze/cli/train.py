"""`mmfreeze train -- COMMAND...`: the framework's own command line, guarded at step 0."""

from __future__ import annotations

from pathlib import Path

import click

from mmfreeze.cli.console import report_error
from mmfreeze.cli.exit_codes import ExitCode
from mmfreeze.exceptions import MmfreezeError

TRAIN_EPILOG = (
    "Example: mmfreeze train -- automodel recipe.yaml --nproc-per-node 2. The processes the command starts in this "
    "environment (torchrun workers included; not DataLoader workers, not other environments) check the run against "
    "the recipe's snapshot before the first optimizer step, and a recipe that needs mmfreeze's runtime integration "
    "(`mmfreeze explain` says which) gets it there. The recipe is the command's -c/--config value, else its first YAML "
    "argument. Recipe key `mmfreeze: {guard: false}` or --no-guard turns the guard off. SIGINT and SIGTERM are passed "
    "to the command. Under sbatch or srun, put the line `mmfreeze train --env RECIPE` prints in the job script instead. "
    "Exit code: the command's own (128 + N when signal N ended it); 2 usage error, 3 the recipe or the launch "
    "cannot be guarded, or the integration cannot be installed."
)


@click.command(epilog=TRAIN_EPILOG, context_settings={"ignore_unknown_options": True})
@click.option("--no-guard", is_flag=True, help="Do not check the run against the snapshot before the first optimizer step.")
@click.option("--env", "env_recipe", type=click.Path(path_type=Path, dir_okay=False, exists=True), default=None,
              help="Print the shell line that arms a job script's own launch for RECIPE, and run nothing.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def train(no_guard: bool, env_recipe: Path | None, command: tuple[str, ...]) -> None:
    """Train with nemo-automodel's own command line, guarded at step 0."""
    from mmfreeze.nemo.launch import check_launch, export_lines, run_with_integration

    guard = False if no_guard else None
    try:
        if env_recipe is not None:
            if command:
                raise click.UsageError("--env prints the line for a job script: give it no command")
            check_launch(env_recipe, guard=guard)
            click.echo(export_lines(env_recipe, guard=guard))
            return
        if not command:
            raise click.UsageError("give the command to run after `--`, e.g. `mmfreeze train -- automodel recipe.yaml`")
        code = run_with_integration(command, guard=guard)
    except MmfreezeError as error:
        report_error(error)
        raise SystemExit(ExitCode.INPUT_ERROR) from None
    raise SystemExit(code)
