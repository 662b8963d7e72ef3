"""A YAML file read for rewriting: its exact text, its one round-trip parse (comments and positions),
and the plain data that parse holds, which is what every other reader of the file sees.

`mmfreeze migrate` parses a file once: discovery decides from the data whether it is a recipe, the
rules find their places in the tree, the loader builds the recipe from the data. The plain data is
what a safe load gives (ruamel's scalar subclasses made plain, merge keys applied); a custom tag
(``!something``) has no plain meaning and is an error naming file:line.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq, TaggedScalar
from ruamel.yaml.scalarbool import ScalarBoolean

from mmfreeze.exceptions import RecipeError
from mmfreeze.recipes.recipe import parse_yaml_text

STANDARD_TAG = "tag:yaml.org,2002:"


@dataclass(frozen=True, kw_only=True)
class YamlFile:
    text: str
    """Exactly as on disk (line endings kept)."""
    tree: Any
    """The round-trip parse: ``CommentedMap`` / ``CommentedSeq`` with line and column of every key and item."""
    data: Any
    """The same document as plain data."""


def parse_roundtrip(text: str, *, source: str) -> YamlFile:
    """``text`` parsed once, round-trip; syntax errors and custom tags name file:line."""
    tree = parse_yaml_text(text, source=source, typ="rt")
    return YamlFile(text=text, tree=tree, data=plain_data(tree, source=source))


def plain_data(node: Any, *, source: str) -> Any:
    """``node`` (a round-trip parse) as plain dicts, lists and scalars."""
    _refuse_custom_tag(node, source)
    if isinstance(node, CommentedMap):
        return {plain_data(key, source=source): plain_data(value, source=source) for key, value in node.items()}
    if isinstance(node, CommentedSeq):
        return [plain_data(item, source=source) for item in node]
    if isinstance(node, ScalarBoolean):  # an anchored boolean: ruamel's is an int
        return bool(node)
    for plain in (bool, int, float, str, bytes):  # bool before int
        if isinstance(node, plain):
            return plain(node)
    if isinstance(node, datetime.datetime):
        return datetime.datetime.combine(node.date(), node.time(), node.tzinfo)
    return node  # None, datetime.date


def _refuse_custom_tag(node: Any, source: str) -> None:
    tag = getattr(getattr(node, "tag", None), "value", None)
    if isinstance(node, TaggedScalar) or (tag is not None and not tag.startswith(STANDARD_TAG)):
        where = source
        if isinstance(node, CommentedMap | CommentedSeq) and node.lc.line is not None:
            where = f"{source}:{node.lc.line + 1}"
        raise RecipeError(f"YAML does not load: the custom tag {tag!r} has no meaning outside the program that "
                          "wrote it; only plain YAML is read (remove the tag)", source=where)
