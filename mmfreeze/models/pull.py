"""Bring the model configs a repository's recipes need into its configs folder, once, with the
revision each came from (`mmfreeze configs pull`). Plan first (which ids are missing: pure file
look-ups), then fetch (the network, through huggingface_hub, which honours ``HF_ENDPOINT`` and
``HF_TOKEN``).

An id is missing when no source the repository carries has it: a local directory, the configs
folder, the bundled registry. The machine's Hugging Face cache does not count (CI does not have
it): a config found only there is pulled into the folder too (huggingface_hub then revalidates
its cached copy instead of downloading it again). Ids are compared case-insensitively, as the
Hub compares them; the first spelling met names the folder.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from mmfreeze.exceptions import ConfigSourceError, MmfreezeError, first_line
from mmfreeze.models.config_folder import CONFIG_FILE, is_hub_id, write_pulled_config
from mmfreeze.models.config_sources import find_offline_config

_COMMIT = re.compile(r"[0-9a-f]{40}")
PULL_THREADS = 8
HUB_ANSWER_SECONDS = 15.0
"""How long a pull waits for the hub to answer one request before it gives up on the whole pull:
huggingface_hub retries a dead connection with backoff, which takes minutes per model."""


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


def plan_pull(recipes: Sequence[Path], *, configs_dir: Path, read_model: ModelReader) -> PullPlan:
    """Which model ids of ``recipes`` have no config in any source the repository carries."""
    plan = PullPlan()
    spelling: dict[str, str] = {}
    for path in recipes:
        try:
            named = read_model(path)
            found = find_offline_config(
                named.model_id, recipe_dir=named.recipe_dir, configs_dir=configs_dir, source=named.source
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


def hub_endpoint() -> str:
    """Where configs are pulled from: ``HF_ENDPOINT`` (read at each call), else the Hugging Face Hub."""
    from huggingface_hub import constants

    return os.environ.get("HF_ENDPOINT") or constants.ENDPOINT


def check_hub_answers(endpoint: str, *, timeout: float = HUB_ANSWER_SECONDS) -> None:
    """One request to ``endpoint`` before any download: a hub that refuses the connection, or does
    not answer within ``timeout`` seconds, fails the pull at once with one error (any HTTP status
    is an answer)."""
    try:
        with urllib.request.urlopen(urllib.request.Request(endpoint.rstrip("/") + "/", method="HEAD"), timeout=timeout):
            return
    except urllib.error.HTTPError:
        return
    except OSError as error:  # URLError (refused, unresolvable) and a read timeout alike
        reason = getattr(error, "reason", error)
        why = f"no answer within {timeout:g} s" if isinstance(reason, TimeoutError) else f"{type(reason).__name__}: {reason}"
        raise ConfigSourceError(
            f"the hub at {endpoint} cannot be reached ({why}); nothing was pulled. Set HF_ENDPOINT to a hub "
            "this machine reaches, or put each config.json in the configs folder as <org>/<name>/config.json",
            key="HF_ENDPOINT",
        ) from None


def pull_configs(
    model_ids: Sequence[str], configs_dir: Path, *, hub_cache: Path | None = None
) -> Iterator[Pulled | ConfigSourceError]:
    """Fetch each id's ``config.json`` into ``configs_dir``, a few at a time; results in ``model_ids``' order."""
    with ThreadPoolExecutor(max_workers=max(1, min(PULL_THREADS, len(model_ids)))) as pool:
        yield from pool.map(lambda model_id: _pull_or_error(model_id, configs_dir, hub_cache), model_ids)


def _pull_or_error(model_id: str, configs_dir: Path, hub_cache: Path | None) -> Pulled | ConfigSourceError:
    try:
        return pull_config(model_id, configs_dir, hub_cache=hub_cache)
    except ConfigSourceError as error:
        return error


def pull_config(model_id: str, configs_dir: Path, *, hub_cache: Path | None = None) -> Pulled:
    """Download ``model_id``'s ``config.json`` from the Hub (``HF_ENDPOINT``, read at each call) and
    write it, unchanged, with its pull record. The revision is the commit the Hub resolved ``main``
    to. ``hub_cache``: huggingface_hub's cache folder (default: its own, ``HF_HUB_CACHE``)."""
    from huggingface_hub import hf_hub_download

    try:
        downloaded = Path(hf_hub_download(
            model_id, CONFIG_FILE, cache_dir=hub_cache, endpoint=hub_endpoint(), etag_timeout=HUB_ANSWER_SECONDS,
        ))
    except Exception as error:  # huggingface_hub raises HTTP, OS and validation errors of many types
        raise ConfigSourceError(f"downloading {CONFIG_FILE} failed: {_brief(error)}", source=model_id) from error
    # hf_hub_download returns <cache>/models--org--name/snapshots/<commit>/config.json.
    revision = downloaded.parent.name
    if not _COMMIT.fullmatch(revision):
        raise ConfigSourceError(f"the Hub did not say which commit {downloaded} is from", source=model_id)
    content = downloaded.read_bytes()
    try:
        if not isinstance(json.loads(content), dict):
            raise ValueError("not a JSON object")
    except ValueError as error:
        raise ConfigSourceError(f"the downloaded {CONFIG_FILE} is not a JSON object: {error}", source=model_id) from error
    return Pulled(model_id=model_id, revision=revision,
                  config_file=write_pulled_config(configs_dir, model_id, content, revision=revision))


def _brief(error: Exception) -> str:
    first = first_line(error)
    return f"{type(error).__name__}: {first}" if first else type(error).__name__
