"""Bring the model configs a repository's recipes need into its configs folder, once, with the
revision each came from (`mmfreeze configs pull`). Plan first (which ids are missing: pure file
look-ups), then fetch (the network, through huggingface_hub, which honours ``HF_ENDPOINT`` and
``HF_TOKEN``).

An id is missing when no source the repository carries has it: a local directory, the configs
folder, the bundled registry. The machine's Hugging Face cache does not count (CI does not have
it): a config found only there is pulled into the folder too (the hub is asked which commit
``main`` is, and the cached copy of that commit is used instead of downloading it again). Ids are
compared case-insensitively, as the Hub compares them; the first spelling met names the folder.

Offline (``HF_HUB_OFFLINE`` set, or a hub that cannot be reached), a pull copies each missing
config from the local Hugging Face cache instead: the copy of the commit the cache's ``refs/main``
records, through the same checks, recorded as ``source: hf-cache`` (nobody asked the hub whether
that commit is still ``main``). An id the cache does not hold is an error naming the cache.

What is read from the hub, and how it is kept to its folders: :mod:`mmfreeze.models.hub`. A pull
writes only the configs folder, whatever the server sends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from mmfreeze.exceptions import ConfigSourceError, MmfreezeError
from mmfreeze.models.config_folder import CONFIG_FILE, PullSource, is_hub_id, model_folder, write_pulled_config
from mmfreeze.models.config_sources import find_offline_config
from mmfreeze.models.hub import cached_main_config, fetch_config, hub_cache_folder
from mmfreeze.settings import LocalModels

PULL_THREADS = 8


@dataclass(frozen=True, kw_only=True)
class NamedModel:
    """The model id one recipe names, with what finding its config needs."""

    model_id: str
    recipe_dir: Path
    """The directory a relative local ``model_id`` is read from."""
    source: str
    """The recipe as messages name it."""


ModelReader = Callable[[Path], NamedModel]
"""Reads the model id of the recipe at a path; raises :class:`MmfreezeError` when it cannot."""


@dataclass(frozen=True, kw_only=True)
class PullPlan:
    """What a pull has to fetch, and what it does not."""

    missing: dict[str, list[str]] = field(default_factory=dict)
    """Model id (first spelling) -> the recipes naming it, for ids no carried source has."""
    available: dict[str, str] = field(default_factory=dict)
    """Model id -> the kind of source that already has it (``local``, ``configs``, ``registry``)."""
    errors: list[MmfreezeError] = field(default_factory=list)
    """Recipes whose model id cannot be read, or names neither a local directory nor a Hub id."""


@dataclass(frozen=True, kw_only=True)
class Pulled:
    model_id: str
    revision: str
    config_file: Path
    source: PullSource


def plan_pull(
    recipes: Sequence[Path], *, configs_dir: Path, read_model: ModelReader, local_models: LocalModels | None = None,
) -> PullPlan:
    """Which model ids of ``recipes`` have no config in any source the repository carries
    (``local_models``: where a local model directory may be)."""
    plan = PullPlan()
    spelling: dict[str, str] = {}
    for path in recipes:
        try:
            named = read_model(path)
            found = find_offline_config(
                named.model_id, recipe_dir=named.recipe_dir, configs_dir=configs_dir, local_models=local_models,
                source=named.source,
            )
        except MmfreezeError as error:
            plan.errors.append(error)
            continue
        model_id, shown = named.model_id, named.source
        first = spelling.setdefault(model_id.lower(), model_id)
        if found is not None:
            plan.available.setdefault(first, found.kind)
        elif not is_hub_id(model_id):
            plan.errors.append(ConfigSourceError(
                f"{model_id!r} is neither a directory holding {CONFIG_FILE} nor a Hub model id (org/name)",
                source=shown, key="model.pretrained_model_name_or_path",
            ))
        else:
            plan.missing.setdefault(first, []).append(shown)
    return plan


def pull_configs(
    model_ids: Sequence[str], configs_dir: Path, *, offline: bool = False,
) -> Iterator[Pulled | ConfigSourceError]:
    """Fetch each id's ``config.json`` into ``configs_dir``, a few at a time; results in ``model_ids``' order."""
    with ThreadPoolExecutor(max_workers=max(1, min(PULL_THREADS, len(model_ids)))) as pool:
        yield from pool.map(lambda model_id: _pull_or_error(model_id, configs_dir, offline), model_ids)


def _pull_or_error(model_id: str, configs_dir: Path, offline: bool) -> Pulled | ConfigSourceError:
    try:
        return pull_config(model_id, configs_dir, offline=offline)
    except ConfigSourceError as error:
        return error


def pull_config(model_id: str, configs_dir: Path, *, hub_cache: Path | None = None, offline: bool = False) -> Pulled:
    """Write ``model_id``'s ``config.json``, unchanged, with its pull record: from the Hub
    (:func:`~mmfreeze.models.hub.fetch_config`; the revision is the commit it resolved ``main`` to),
    or ``offline`` from the hub cache (the revision is the commit the cache's ``refs/main`` names)."""
    if offline:
        fetched = cached_main_config(model_id, hub_cache=hub_cache)
        if fetched is None:
            raise ConfigSourceError(
                f"the hub cache {hub_cache_folder(hub_cache)} has no {CONFIG_FILE} of this id (at the commit its "
                "refs/main names), and the hub is not asked offline; pull where a hub is reachable, or put the file "
                "in the configs folder as <org>/<name>/config.json", source=model_id)
        source: PullSource = "hf-cache"
    else:
        fetched, source = fetch_config(model_id, hub_cache=hub_cache), "hub"
    written = _write(configs_dir, model_id, fetched.content, revision=fetched.commit, source=source)
    return Pulled(model_id=model_id, revision=fetched.commit, config_file=written, source=source)


def _write(configs_dir: Path, model_id: str, content: bytes, *, revision: str, source: PullSource) -> Path:
    """The config and its record, written where the id names, which must resolve inside ``configs_dir``."""
    folder = model_folder(configs_dir, model_id)
    try:
        resolved = folder.resolve()
        if not resolved.is_relative_to(configs_dir.resolve()):
            raise ConfigSourceError(f"{folder} resolves to {resolved}, outside the configs folder {configs_dir}; "
                                    "nothing was written", source=model_id)
        return write_pulled_config(configs_dir, model_id, content, revision=revision, source=source)
    except (OSError, RuntimeError) as error:  # RuntimeError: a symlink loop (Python before 3.13)
        raise ConfigSourceError(f"cannot write {folder / CONFIG_FILE}: {error}", source=model_id) from error


