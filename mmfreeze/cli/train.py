"""`mmfreeze train -- COMMAND...`: the framework's own command line, with the integration installed."""

from __future__ import annotations

import click

from mmfreeze.cli.console import report_error
from mmfreeze.cli.exit_codes import ExitCode
from mmfreeze.exceptions import MmfreezeError

TRAIN_EPILOG = (
    "Example: mmfreeze train -- automodel recipe.yaml --nproc-per-node 2. Every Python process the command "
    "starts (torchrun workers included) runs mmfreeze.nemo.install() first, for the recipe the command names "
    "(-c/--config, else its first YAML argument): (modality, role) freeze_config sections and "
    "distributed.multimodal additions run through the framework's own parse and apply points, and the guard "
    "checks the run against the recipe's snapshot before the first optimizer step (recipe key "
    "`mmfreeze: {guard: false}` or --no-guard turns it off). Exit code: the command's own; "
    "2 usage error, 3 the integration cannot be installed or no recipe is named."
)


@click.command(epilog=TRAIN_EPILOG, context_settings={"ignore_unknown_options": True})
@click.option("--no-guard", is_flag=True, help="Do not run the guard before the first optimizer step.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def train(no_guard: bool, command: tuple[str, ...]) -> None:
    """Train with nemo-automodel's own command line, mmfreeze's integration installed."""
    from mmfreeze.nemo.launch import run_with_integration

    try:
        code = run_with_integration(command, guard=False if no_guard else None)
    except MmfreezeError as error:
        report_error(error)
        raise SystemExit(ExitCode.INPUT_ERROR) from None
    raise SystemExit(code)
