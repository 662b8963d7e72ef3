"""The one way the scripts here write a generated package-data file, or check the committed one."""

from __future__ import annotations

from pathlib import Path


def write_or_check(output: Path, text: str, *, check: bool, made_from: str, written: str) -> int:
    """``--check``: exit status 1 when ``output`` is not ``text`` (what ``made_from`` gives now);
    else write it. ``written``: what the file holds, for the line printed after writing."""
    if check:
        same = output.is_file() and output.read_text(encoding="utf-8") == text
        print(f"{output.name} {'matches' if same else 'differs from'} {made_from}")
        return 0 if same else 1
    output.write_text(text, encoding="utf-8")
    print(f"wrote {output} ({written})")
    return 0
