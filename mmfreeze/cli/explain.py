"""`mmfreeze explain RECIPE`: one recipe, executed on the meta device, explained."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from mmfreeze.cli.console import out, report_error, warn_on_transformers_version
from mmfreeze.cli.exit_codes import EXIT_CODE_HELP, ExitCode
from mmfreeze.cli.options import allowed_targets, model_loading_options, structure_cache
from mmfreeze.exceptions import MmfreezeError
from mmfreeze.explain import explain_model
from mmfreeze.models.loader import load_structure
from mmfreeze.recipes.recipe import load_recipe


@click.command(epilog=EXIT_CODE_HELP)
@click.argument("recipe", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@model_loading_options
def explain(
    recipe: Path, output_format: str, allow_network: bool, allow_targets: tuple[str, ...],
    cache_dir: Path | None, no_cache: bool,
) -> None:
    """Build RECIPE's model on the meta device and explain it."""
    warn_on_transformers_version()
    try:
        loaded = load_structure(
            load_recipe(recipe, allowed_targets=allowed_targets(allow_targets)),
            structure_cache(cache_dir, no_cache),
            allow_network=allow_network,
        )
    except MmfreezeError as error:
        report_error(error)
        raise SystemExit(ExitCode.INPUT_ERROR) from None
    explanation = explain_model(loaded)
    if output_format == "json":
        click.echo(json.dumps(explanation, indent=2))
    else:
        _print_text(explanation)


def _print_text(explanation: dict[str, Any]) -> None:
    table = Table(title=escape(explanation["recipe"]), show_header=False)
    source = explanation["config_source"]
    rows = [
        ("model id", explanation["model_id"]),
        ("architecture", explanation["architecture"]),
        ("auto class", explanation["auto_class"]),
        ("config source", f"{source['kind']} ({source['location']})" + (f", {source['provenance']}" if source["provenance"] else "")),
        ("parameters", f"{explanation['parameters']:,}"),
        ("parameter tensors", f"{explanation['parameter_tensors']:,} (+{explanation['tied_aliases']} tied aliases)"),
    ]
    for name, value in rows:
        table.add_row(name, escape(str(value)))
    out.print(table)
