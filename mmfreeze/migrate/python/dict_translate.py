"""A literal legacy dict -> the new-vocabulary dict's source text, comments carried by key.

No model is known at a Python call site, so this is the intent translation with the legacy
defaults written out: ``vision`` always (the legacy default froze it), ``audio`` only when the dict
names it, ``language_model`` always, the video embedder as a ``modules`` path; ``freeze_embeddings``
is removed (never read). A dict that is not provably a literal legacy dict returns ``None``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from mmfreeze.freeze.legacy import LEGACY_KEYS, VIDEO_EMBEDDER_KEY, VIDEO_EMBEDDER_SUBSTRING
from mmfreeze.migrate.section import KEY_TARGETS

_ELEMENT_LINE = re.compile(r"""^(?P<indent>\s*)(?P<q>['"])(?P<key>\w+)(?P=q)\s*:[^#]*?(?:#(?P<comment>.*))?$""")


@dataclass(frozen=True)
class Translation:
    code: str
    notes: tuple[str, ...]


def literal_legacy_items(node: cst.BaseExpression) -> dict[str, bool] | None:
    """``{"freeze_x": True, ...}`` as data; ``None`` for anything not provably that."""
    if not isinstance(node, cst.Dict):
        return None
    items: dict[str, bool] = {}
    for element in node.elements:
        if not isinstance(element, cst.DictElement) or not isinstance(element.key, cst.SimpleString):
            return None
        key = element.key.evaluated_value
        value = element.value
        if key not in LEGACY_KEYS or not (isinstance(value, cst.Name) and value.value in ("True", "False")):
            return None
        items[key] = value.value == "True"
    return items


def new_items(legacy: dict[str, bool]) -> tuple[dict[str, str], list[str]]:
    """New key -> Python source of its value, and notes on what was dropped."""
    items = {"vision": f'{{"tower": {legacy.get("freeze_vision_tower", True)}}}'}
    if "freeze_audio_tower" in legacy:
        items["audio"] = f'{{"tower": {legacy["freeze_audio_tower"]}}}'
    items["language_model"] = str(legacy.get("freeze_language_model", False))
    if legacy.get(VIDEO_EMBEDDER_KEY):
        items["modules"] = f'["{VIDEO_EMBEDDER_SUBSTRING}"]'
    notes = ["freeze_embeddings removed (never read)"] if "freeze_embeddings" in legacy else []
    return items, notes


def translate(node: cst.Dict, code: str) -> Translation | None:
    """New source for the dict whose source is ``code``; multi-line dicts keep one key per line."""
    legacy = literal_legacy_items(node)
    if legacy is None:
        return None
    items, notes = new_items(legacy)
    quote = '"' if not node.elements or node.elements[0].key.value.startswith('"') else "'"
    if "\n" not in code:
        body = ", ".join(f'"{key}": {value}' for key, value in items.items())
        return Translation(code=_requote("{" + body + "}", quote), notes=tuple(notes))
    rendered = _multiline(code, items, quote)
    return None if rendered is None else Translation(code=rendered, notes=tuple(notes))


def _multiline(code: str, items: dict[str, str], quote: str) -> str | None:
    lines = code.split("\n")
    if lines[0].strip() != "{" or lines[-1].strip() != "}":
        return None
    above: dict[str | None, list[str]] = {}
    trailing: dict[str, str] = {}
    pending: list[str] = []
    indent = None
    for line in lines[1:-1]:
        if line.strip().startswith("#"):
            pending.append(line.strip())
            continue
        match = _ELEMENT_LINE.match(line)
        if match is None:
            return None
        indent = match.group("indent") if indent is None else indent
        target = KEY_TARGETS.get(match.group("key"))
        above.setdefault(target, []).extend(pending)
        pending = []
        if match.group("comment") and target is None:
            above[None].append(f"# (was on {match.group('key')}){match.group('comment')}")
        elif match.group("comment"):
            trailing[target] = f"#{match.group('comment')}"
    indent = indent or lines[-1][: len(lines[-1]) - len(lines[-1].lstrip())] + "    "
    out = ["{"]
    out += [f"{indent}{comment}" for comment in above.get(None, []) + pending]
    for key, value in items.items():
        out += [f"{indent}{comment}" for comment in above.get(key, [])]
        out.append(_requote(f'{indent}"{key}": {value},', quote) + (f"  {trailing[key]}" if key in trailing else ""))
    return "\n".join(out + [lines[-1]])


def _requote(text: str, quote: str) -> str:
    return text if quote == '"' else text.replace('"', "'")
