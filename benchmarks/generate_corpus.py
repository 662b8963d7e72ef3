"""Generate N recipes as variations of the bundled ones, over the same distinct model configs.

    python benchmarks/generate_corpus.py OUT_DIR N

Variant i copies bundled recipe i mod len(corpus) and changes what teams change between runs —
learning rate, seed, and (every other variant) whether the language model is frozen — so the
frozen sets differ but the set of distinct checkpoints does not. Benchmark input only: it is
never committed.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Sequence
from pathlib import Path

from ruamel.yaml import YAML


def generate_corpus(source: Path, out: Path, count: int, *, only: Sequence[str] = ()) -> list[Path]:
    """``count`` variants of the recipes under ``source`` (of ``only`` these, relative to it, if given)."""
    yaml = YAML()  # round-trip: comments and layout of the originals survive
    bases = [source / name for name in only] or sorted(source.rglob("*.yaml"))
    written = []
    for index in range(count):
        base = bases[index % len(bases)]
        document = yaml.load(base.read_text())
        _vary(document, index)
        target = out / f"{index // 100:02d}" / f"{index:04d}_{base.name}"
        target.parent.mkdir(parents=True, exist_ok=True)
        stream = io.StringIO()
        yaml.dump(document, stream)
        target.write_text(f"# variant {index} of {base.relative_to(source)}\n" + stream.getvalue())
        written.append(target)
    return written


def _vary(document: dict, index: int) -> None:
    if isinstance(document.get("optimizer"), dict):
        document["optimizer"]["lr"] = round(1e-5 * (1 + index % 7), 8)
    if isinstance(document.get("rng"), dict):
        document["rng"]["seed"] = 1000 + index
    section = document.get("freeze_config")
    if isinstance(section, dict) and index % 2:
        section["language_model"] = not section.get("language_model", False)


if __name__ == "__main__":
    out_dir, count = Path(sys.argv[1]), int(sys.argv[2])
    print(f"wrote {len(generate_corpus(Path(__file__).resolve().parent.parent / 'example_configs', out_dir, count))} recipes to {out_dir}")
