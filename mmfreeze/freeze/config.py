"""The new `freeze_config` vocabulary: parsed once, validated in one place, errors that teach.

```yaml
freeze_config:
  vision: {tower: true, projector: false}
  audio:  {tower: true, projector: true}
  language_model: false
  modules: [patch_generator.video_embedder]   # canonical module paths
```

Every key other than ``language_model`` and ``modules`` is a modality from the resolver, mapping
roles to booleans. Nothing is frozen implicitly: what is not written is not frozen.
:func:`parse_freeze_config` checks the shape of the section alone; :func:`check_against_model`
checks it against the model's resolved inventory (modalities, roles and module paths that exist).
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from mmfreeze.exceptions import FreezeConfigError
from mmfreeze.freeze.framework import SELECTOR_KEYS
from mmfreeze.freeze.legacy import LEGACY_KEYS

Vocabulary = Literal["absent", "legacy", "selectors", "new"]
LANGUAGE_MODEL_KEY = "language_model"
MODULES_KEY = "modules"
SECTION = "freeze_config"
EMBEDDINGS_HINT = (
    "`freeze_embeddings` was never read by the old freezing code (recipes trained with it ignored), "
    "so it has no meaning to carry over; `mmfreeze migrate` removes it. To freeze the token "
    "embeddings explicitly, list their module path under `modules:` "
    "(e.g. `modules: [model.language_model.embed_tokens]`; `mmfreeze explain` shows the paths)"
)


@dataclass(frozen=True, kw_only=True)
class FreezeConfig:
    """A validated new-vocabulary `freeze_config`."""

    roles: Mapping[str, Mapping[str, bool]] = field(default_factory=dict)
    """Modality -> role -> freeze it."""
    language_model: bool = False
    """Freeze the whole language model: decoder, token embeddings, final norm and lm_head."""
    modules: tuple[str, ...] = ()
    """Canonical module paths frozen as a whole (exact path or a prefix on a dot boundary)."""

    @classmethod
    def from_dict(cls, data: Any, *, source: str | None = None) -> FreezeConfig:
        return parse_freeze_config(data, source=source)



def detect_vocabulary(section: Any, *, source: str | None = None) -> Vocabulary:
    """Which engine a `freeze_config` section asks for.

    ``None`` (no section, or ``freeze_config: ~``) is absent. An empty mapping is legacy, since the
    old engine froze vision for ``{}`` and every tracked recipe was written for it. A section of
    framework keys (``freeze_*``, ``unfreeze_modules``) is ``selectors`` when it has
    ``freeze_modules`` or ``unfreeze_modules`` (nemo-automodel 0.7), else legacy; one that also
    has new keys is an error.
    """
    if section is None:
        return "absent"
    if not isinstance(section, Mapping):
        raise FreezeConfigError(
            f"must be a mapping, got {type(section).__name__} {section!r}", source=source, key=SECTION
        )
    legacy = [key for key in section if _is_legacy_key(key)]
    if not section or len(legacy) == len(section):
        return "selectors" if any(key in section for key in SELECTOR_KEYS) else "legacy"
    if legacy:
        new = [key for key in section if not _is_legacy_key(key)]
        raise FreezeConfigError(
            f"mixes legacy keys ({', '.join(map(str, legacy))}) with new keys ({', '.join(map(str, new))}); "
            "write one vocabulary (`mmfreeze migrate` converts the legacy one)",
            source=source, key=SECTION,
        )
    return "new"


def _is_legacy_key(key: Any) -> bool:
    return isinstance(key, str) and (key in LEGACY_KEYS or key in SELECTOR_KEYS or key.startswith("freeze_"))


def parse_freeze_config(data: Any, *, source: str | None = None) -> FreezeConfig:
    """A :class:`FreezeConfig` from a new-vocabulary section, or one error listing every problem."""
    if not isinstance(data, Mapping):
        raise FreezeConfigError(f"must be a mapping, got {type(data).__name__}", source=source, key=SECTION)
    problems: list[str] = []
    roles: dict[str, dict[str, bool]] = {}
    for key, value in data.items():
        if key == LANGUAGE_MODEL_KEY:
            _check_bool(value, f"{SECTION}.{key}", problems)
        elif key == MODULES_KEY:
            _check_module_list(value, problems)
        else:
            roles[str(key)] = _parse_roles(key, value, problems)
    if problems:
        raise FreezeConfigError(_join(problems), source=source, key=SECTION)
    return FreezeConfig(
        roles=roles,
        language_model=bool(data.get(LANGUAGE_MODEL_KEY, False)),
        modules=tuple(data.get(MODULES_KEY) or ()),
    )


def _parse_roles(key: Any, value: Any, problems: list[str]) -> dict[str, bool]:
    where = f"{SECTION}.{key}"
    if key == "freeze_embeddings" or _is_legacy_key(key):
        problems.append(f"{where}: {EMBEDDINGS_HINT if key == 'freeze_embeddings' else 'is a legacy key'}")
        return {}
    if not isinstance(key, str) or not key:
        problems.append(f"{where}: a modality name must be a non-empty string")
        return {}
    if not isinstance(value, Mapping):
        problems.append(
            f"{where}: a modality maps roles to true/false, e.g. `{key}: {{tower: true, projector: false}}`; "
            f"got {value!r}"
        )
        return {}
    for role, flag in value.items():
        _check_bool(flag, f"{where}.{role}", problems)
    return {str(role): bool(flag) for role, flag in value.items()}


def _check_bool(value: Any, where: str, problems: list[str]) -> None:
    if not isinstance(value, bool):
        problems.append(f"{where}: must be true or false, got {value!r} ({type(value).__name__})")


def _check_module_list(value: Any, problems: list[str]) -> None:
    where = f"{SECTION}.{MODULES_KEY}"
    if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
        problems.append(f"{where}: must be a list of module paths (strings), got {value!r}")


def check_against_model(
    config: FreezeConfig,
    *,
    roles_by_modality: Mapping[str, Collection[str]],
    module_paths: Collection[str],
    source: str | None = None,
) -> None:
    """Raise one error listing every modality, role or module path the model does not have."""
    problems = [*_unknown_roles(config, roles_by_modality), *_unmatched_modules(config, module_paths)]
    if problems:
        raise FreezeConfigError(_join(problems), source=source, key=SECTION)


def _unknown_roles(config: FreezeConfig, roles_by_modality: Mapping[str, Collection[str]]) -> Iterable[str]:
    have = ", ".join(f"{m} ({', '.join(sorted(r))})" for m, r in sorted(roles_by_modality.items())) or "none"
    for modality, roles in config.roles.items():
        if modality not in roles_by_modality:
            yield (f"{SECTION}.{modality}: this model has no modality {modality!r}"
                   f"{_did_you_mean(modality, [*roles_by_modality, LANGUAGE_MODEL_KEY, MODULES_KEY])}; "
                   f"modalities (roles): {have}")
            continue
        for role in roles:
            if role not in roles_by_modality[modality]:
                yield (f"{SECTION}.{modality}.{role}: the {modality} modality has no role {role!r}"
                       f"{_did_you_mean(role, roles_by_modality[modality])}; "
                       f"it has: {', '.join(sorted(roles_by_modality[modality]))}")


def _unmatched_modules(config: FreezeConfig, module_paths: Collection[str]) -> Iterable[str]:
    for path in config.modules:
        if path not in module_paths:
            nearest = difflib.get_close_matches(path, list(module_paths), n=3, cutoff=0.5)
            hint = f"; nearest existing paths: {', '.join(nearest)}" if nearest else ""
            yield f"{SECTION}.{MODULES_KEY}: {path!r} is not a module path of this model{hint}"


def _did_you_mean(value: str, options: Iterable[str]) -> str:
    match = difflib.get_close_matches(value, list(options), n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""


def _join(problems: list[str]) -> str:
    if len(problems) == 1:
        return problems[0]
    return f"{len(problems)} problems:\n" + "\n".join(f"  - {problem}" for problem in problems)
