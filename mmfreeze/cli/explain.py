"""`mmfreeze explain RECIPE`: one recipe, executed on the meta device, explained."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Sequence
from itertools import groupby
from pathlib import Path
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from mmfreeze.cli.console import out, report_error, warn_on_cache_write
from mmfreeze.cli.exit_codes import ExitCode, exit_code_help
from mmfreeze.cli.options import builder_options, command_workspace, model_loading_options, repository_settings
from mmfreeze.exceptions import MmfreezeError
from mmfreeze.explain.builder import explain_builder
from mmfreeze.memory.recipe import choose_world_size
from mmfreeze.explain.recipe import explain_recipe


@click.command(epilog=exit_code_help(ExitCode.OK, ExitCode.USAGE, ExitCode.INPUT_ERROR, ExitCode.REJECTED))
@click.argument("recipe", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option(
    "--rank-uniform", "rank_uniform", multiple=True, metavar="MODALITY",
    help="Declare (as the data side would) that every rank executes MODALITY in every step; repeatable. "
    "Adds to what the recipe declares in distributed.multimodal.batch_contract.rank_uniform; without "
    "either, execution is assumed to possibly differ across ranks.",
)
@click.option(
    "--world-size", "world_size", type=click.IntRange(min=1), metavar="N",
    help="Size per-rank memory (parameters, gradients, optimizer states; activations out of scope) at N ranks. "
    "Default: [tool.mmfreeze] world_size, else the recipe's distributed sizes.",
)
@click.option("--check", is_flag=True, help=f"Exit {int(ExitCode.REJECTED)} when setup validation rejects the recipe's distributed policy.")
@builder_options
@model_loading_options
def explain(
    recipe: Path, output_format: str, rank_uniform: tuple[str, ...], world_size: int | None, check: bool,
    builder: str | None,
    builder_fallback: str | None, allow_network: bool, allow_targets: tuple[str, ...], configs: Path | None,
    cache_dir: Path | None, no_cache: bool,
) -> None:
    """Build RECIPE's model on the meta device and explain it: model, multimodal modules, freezing."""
    settings = repository_settings([recipe], configs=configs, allow_targets=allow_targets, builder=builder,
                                   builder_fallback=builder_fallback)
    workspace = command_workspace(settings, cache_dir=cache_dir, no_cache=no_cache, allow_network=allow_network)
    try:
        parsed = workspace.recipe(recipe)
        loaded = workspace.loaded(workspace.request(parsed))
        world = choose_world_size(parsed, option=world_size, setting=settings.world_size)
        explanation = explain_recipe(parsed, loaded, workspace.frozen_set(parsed), rank_uniform=rank_uniform,
                                     world=world, teacher=lambda: workspace.teacher(parsed))
        explanation["builder"] = explain_builder(workspace.builder, loaded, target=parsed.model.target)
    except MmfreezeError as error:
        report_error(error)
        raise SystemExit(ExitCode.INPUT_ERROR) from None
    warn_on_cache_write(workspace.structures)
    if output_format == "json":
        click.echo(json.dumps(explanation, indent=2))
    else:
        _print_model(explanation)
        _print_modules(explanation)
        _print_freezing(explanation["freezing"])
        _print_rates(explanation["rates"])
        _print_reachability(explanation["reachability"])
        _print_distributed(explanation["distributed"])
        _print_native(explanation["nemo_automodel"])
        _print_memory(explanation["memory"])
    if check and explanation["distributed"]["verdict"] == "rejected":
        raise SystemExit(ExitCode.REJECTED)


def _print_model(explanation: dict[str, Any]) -> None:
    source = explanation["config_source"]
    provenance = f", {source['provenance']}" if source["provenance"] else ""
    rows = [
        ("model id", explanation["model_id"]),
        ("architecture", f"{explanation['architecture']} ({explanation['architecture_module']})"),
        ("builder", f"{explanation['builder']['builder']} ({explanation['builder']['reason']})"),
        *([("divergence", explanation["builder"]["divergence"])] if explanation["builder"]["divergence"] else []),
        ("auto class", explanation["auto_class"]),
        ("config source", f"{source['kind']} ({source['location']}){provenance}"),
        ("parameters", f"{explanation['parameters']:,}"),
        ("parameter tensors", f"{explanation['parameter_tensors']:,} (+{explanation['tied_aliases']} tied aliases)"),
        ("language model", ", ".join(f"{k}: {v}" for k, v in explanation["language_model"]["parts"].items())
         + (" (lm_head tied)" if explanation["language_model"]["tied_lm_head"] else "")),
    ]
    _print_table(escape(explanation["recipe"]), (), [(name, escape(str(value))) for name, value in rows])


def _print_table(
    title: str, columns: Sequence[str], rows: Iterable[Sequence[str]], *, right: Collection[str] = (),
) -> None:
    """A table titled on its left; the ``right`` columns (figures) right-justified; no header row
    without ``columns``."""
    table = Table(title=title, title_justify="left", show_header=bool(columns))
    for column in columns:
        table.add_column(column, justify="right" if column in right else "left")
    for row in rows:
        table.add_row(*row)
    out.print(table)


def _print_modules(explanation: dict[str, Any]) -> None:
    rows = [(escape(module["path"]), escape(module["modality"]), escape(str(module["role"])),
             "yes" if module["conditionally_executed"] else "no", f"{module['parameters']:,}", module["source"])
            for module in explanation["multimodal_modules"]]
    _print_table("multimodal modules", ("path", "modality", "role", "conditional", "parameters", "source"), rows,
                 right={"parameters"})


def _print_freezing(freezing: dict[str, Any]) -> None:
    rules = freezing["framework"] + ("" if freezing["vocabulary"] == "new" else f": {freezing['framework_reason']}")
    title = f"freezing ({freezing['vocabulary']} vocabulary, rules of {escape(rules)}"
    title += f", {freezing['lora_adapter_tensors']} LoRA adapter tensors)" if freezing["lora_adapter_tensors"] else ")"
    rows = [(escape(group["group"]), escape(str(group["path"] or "")), group["state"],
             f"{group['frozen_tensors']}/{group['tensors']}", f"{group['frozen_parameters']:,}/{group['parameters']:,}")
            for group in freezing["groups"]]
    _print_table(title, ("group", "path", "state", "frozen tensors", "frozen parameters"), rows)
    out.print(
        f"frozen: {freezing['frozen_tensors']:,} tensors, {freezing['frozen_parameters']:,} parameters; "
        f"trainable: {freezing['trainable_tensors']:,} tensors, {freezing['trainable_parameters']:,} parameters"
    )


def _print_rates(rates: list[dict[str, Any]]) -> None:
    """One row per (rate, module); nothing when every tensor trains at the optimizer's own rate."""
    if not rates:
        return
    rows = [(f"{rate['lr_mult']:g}", f"{rate['wd_mult']:g}", escape(module["module"]), f"{module['tensors']:,}",
             f"{module['parameters']:,}") for rate in rates for module in rate["modules"]]
    _print_table("learning rates (optimizer.param_group_overrides; every other trainable tensor: lr_mult 1, wd_mult 1)",
                 ("lr_mult", "wd_mult", "module", "tensors", "parameters"), rows)


def _print_reachability(reach: dict[str, Any]) -> None:
    """Per mix: the method, then each module the loss never reaches, what that does, and the fixes."""
    out.print(f"[bold]reachability[/] (mixes: {escape(reach['mixes'])})")
    for result in reach["results"]:
        if result["not_probed"]:
            out.print(f"  {escape(result['mix'])}: not probed ({escape(result['not_probed'])})")
            continue
        total = sum(group["tensors"] for group in result["groups"])
        out.print(f"  {escape(result['mix'])} ({escape(result['method'])}): "
                  + (f"{total:,} trainable tensors the loss never reaches" if total else "every trainable tensor reached"))
        for group in result["groups"]:
            out.print(f"    {escape(group['module'])}: {group['tensors']:,} tensors, {group['parameters']:,} parameters")
            out.print(f"      {escape(group['consequence'])}")
            out.print("      fix: " + "\n           ".join(escape(fix) for fix in group["fixes"]))


def _print_distributed(plan: dict[str, Any]) -> None:
    if plan["verdict"] == "none":
        out.print(f"[bold]distributed.multimodal[/]: {escape(plan['reason'])}")
        return
    mesh = ", ".join(f"{dim}={size}" for dim, size in plan["mesh"]["dims"].items())
    out.print(f"[bold]distributed.multimodal[/] on mesh ({mesh}): ", end="")
    if plan["verdict"] == "rejected":
        out.print("[bold red]rejected at setup[/]")
        out.print(escape(plan["error"]))
    else:
        out.print("[bold green]accepted[/]")
        units = [unit["path"] for unit in plan["fsdp_units"]]
        out.print(f"FSDP units ({len(units)}, root last): {escape(_abbreviate(units))}")
        out.print(f"root-owned: {escape(', '.join(plan['root_owned']) or 'none')}")
        out.print(f"replicated: {escape(', '.join(plan['replicated']) or 'none')}")
        for modality, decision in plan["dummy_forward"].items():
            state = "on" if decision["enabled"] else "off"
            out.print(f"dummy forward ({escape(modality)}): {state} — {escape(decision['reason'])}")
    contract = plan.get("batch_contract")
    if contract is not None:
        uniform = ", ".join(contract["rank_uniform"]) or "none"
        out.print(f"batch contract: rank-uniform modalities {escape(uniform)} ({escape(contract['declared_by'])})")
    for note in plan["notes"]:
        out.print(f"note: {escape(note)}")


def _print_native(native: dict[str, Any]) -> None:
    keys = f" ({escape(', '.join(native['keys']))})" if native["keys"] else ""
    out.print(f"[bold]nemo-automodel 0.7[/]: {native['verdict']}{keys}")
    if native["verdict"] == "needs the integration":
        out.print(f"train it with `mmfreeze train -- automodel RECIPE` or mmfreeze.nemo.install() "
                  f"(nemo-automodel {', '.join(native['integration_releases'])})")
    if native["hazard_before_0_7"]:
        out.print(f"warning: {escape(native['hazard_before_0_7'])}; the integration refuses those releases")


def _print_memory(memory: dict[str, Any] | None) -> None:
    """Per-rank bytes, ranks with equal figures on one row; says what is out of scope."""
    if memory is None:
        out.print("[bold]memory per rank[/]: no world size (give --world-size N, or [tool.mmfreeze] world_size)")
        return
    if "error" in memory:
        out.print(f"[bold]memory per rank[/] at {memory['world_size']} ranks: not sized: {escape(memory['error'])}")
        return
    title = (f"memory per rank at {memory['world_size']} ranks ({escape(memory['world_size_source'])}; "
             f"{memory['optimizer_class']}, {memory['fsdp_units']} FSDP2 units; activations out of scope)")
    columns = ("ranks", "parameters", "gradients", "optimizer", "total")
    rows = [(ranks, *(_bytes(value) for value in (*figures, sum(figures))))
            for ranks, figures in _equal_rows(memory["ranks"])]
    _print_table(title, columns, rows, right=columns[1:])
    if (teacher := memory.get("teacher")) is not None:
        out.print(f"teacher: {escape(teacher['what'])}: {_bytes(max(teacher['parameters']))} per rank at the most, "
                  f"{teacher['fsdp_units']} FSDP2 units of its own")
    peak = memory["all_gather_peak"]
    if peak is not None:
        unit = peak["unit"] or "the root unit"
        out.print(f"transient all-gather peak: {_bytes(peak['bytes'])} ({escape(unit)}, {peak['dtype']}): "
                  f"{escape(peak['what'])}")
    out.print(f"scope: {escape(memory['scope'])}")


def _equal_rows(ranks: list[dict[str, Any]]) -> list[tuple[str, tuple[int, int, int]]]:
    """Consecutive ranks with the same figures (parameters, gradients, optimizer) as one row (``0-6``),
    in rank order."""
    rows = []
    for figures, same in groupby(ranks, key=lambda row: (row["parameters"], row["gradients"], row["optimizer"])):
        numbers = [row["rank"] for row in same]
        rows.append((f"{numbers[0]}" if len(numbers) == 1 else f"{numbers[0]}-{numbers[-1]}", figures))
    return rows


def _bytes(value: int) -> str:
    """Exact bytes, with a binary-unit reading beside them."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if value >= size:
            return f"{value:,} B ({value / size:.2f} {unit})"
    return f"{value:,} B"


def _abbreviate(paths: list[str], keep: int = 6) -> str:
    shown = paths if len(paths) <= keep else [*paths[: keep - 1], f"... ({len(paths) - keep} more)", paths[-1]]
    return ", ".join(shown)
