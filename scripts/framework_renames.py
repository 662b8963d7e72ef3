"""Write mmfreeze/models/framework_renames.json: how the framework's own classes name the checkpoint.

    python scripts/framework_renames.py            # rewrite the JSON from the bundled snapshots
    python scripts/framework_renames.py --check    # exit 1 when the committed JSON differs

A compiled section made where the framework builds its own class (``compiled_for: ..., builder
nemo-automodel 0.7.0``) names that class's tensors. An environment that cannot build the class
holds the section to its source through the checkpoint names: this class's name -> checkpoint
name -> its own class's name (:func:`mmfreeze.freeze.compiler.recipe.compiled_frozen_set`). The
snapshot made where the section was compiled records those renames; this JSON is mmfreeze's own
record of them, so the comparison is made in a repository that commits no such snapshot too.

The renames are read from the bundled snapshots (``snapshots/example_configs``) that the framework
built, which `.ci/framework_env` checks against the framework's own classes and state-dict adapters
(`mmfreeze snapshot --check example_configs`, exit 0 required): every class whose adapter renames a
tensor, keyed by the class name the header gives. Two snapshots of one class must agree.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from generated_file import write_or_check
from mmfreeze.freeze.compiler.target import made_for
from mmfreeze.snapshots.format import parse_snapshot

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOTS = ROOT / "snapshots" / "example_configs"
OUTPUT = ROOT / "mmfreeze" / "models" / "framework_renames.json"
ADAPTER = "nemo-automodel "
"""How a snapshot's renames source starts when the framework's state-dict adapter gave them."""


def generate(snapshots: Path) -> dict[str, object]:
    """``{"made_for": ..., "classes": {class name: {"source", "rules"}}}`` from every framework-made
    snapshot under ``snapshots`` whose renames its adapter gave; a ``SystemExit`` naming both files
    when two disagree."""
    made, classes, seen = set(), {}, {}
    for path in sorted(snapshots.rglob("*.frozen.txt")):
        snapshot = parse_snapshot(path.read_text(encoding="utf-8"), source=str(path))
        header, renames = snapshot.header, snapshot.renames
        if not renames.rules or not renames.source.startswith(ADAPTER):
            continue
        made.add(made_for(header.framework, header.transformers, header.builder))
        entry = renames.to_json()
        if classes.setdefault(header.architecture, entry) != entry:
            raise SystemExit(f"{path} and {seen[header.architecture]} record other renames for {header.architecture}")
        seen.setdefault(header.architecture, path)
    if len(made) != 1:
        raise SystemExit(f"the bundled snapshots with adapter renames were made in {len(made)} environments "
                         f"({sorted(made)}), not one")
    return {"made_for": made.pop(), "classes": dict(sorted(classes.items()))}


def render(data: dict[str, object]) -> str:
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the committed JSON differs")
    args = parser.parse_args(argv)
    data = generate(SNAPSHOTS)
    return write_or_check(OUTPUT, render(data), check=args.check, made_from="the bundled snapshots",
                          written=f"{len(data['classes'])} classes, {data['made_for']}")


if __name__ == "__main__":
    sys.exit(main())
