"""Bring the model configs a repository's recipes need into its configs folder, once, with the
revision each came from (`mmfreeze configs pull`). Plan first (which ids are missing: pure file
look-ups), then fetch (the network, through huggingface_hub, which honours ``HF_ENDPOINT`` and
``HF_TOKEN``).

An id is missing when no source the repository carries has it: a local directory, the configs
folder, the bundled registry. The machine's Hugging Face cache does not count (CI does not have
it): a config found only there is pulled into the folder too (the hub is asked which commit
``main`` is, and the cached copy of that commit is used instead of downloading it again). Ids are
compared case-insensitively, as the Hub compares them; the first spelling met names the folder.

The hub's answer is data, never a path: a pull reads only the configs folder and the model's
folder in the hub cache, and writes only the configs folder, whatever the server sends. So it
does not hand the answer to ``hf_hub_download``, which names cache files after the ``ETag`` header
(one holding ``../`` writes elsewhere) and returns whatever a cache link resolves to. It asks for
the metadata (``get_hf_file_metadata``), checks it, and reads at most :data:`MAX_CONFIG_BYTES`
itself. A commit that is not a commit, an ``ETag`` that is not an identifier, a body over the
limit, a redirect to plain HTTP on another host: each is an error naming the server, and nothing
is written. A cached copy is used only where it resolves inside that model's cache folder.
"""

from __future__ import annotations

import json
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from mmfreeze.exceptions import ConfigSourceError, MmfreezeError, first_line
from mmfreeze.models.config_folder import CONFIG_FILE, is_hub_id, model_folder, write_pulled_config
from mmfreeze.models.config_sources import find_offline_config

_COMMIT = re.compile(r"[0-9a-f]{40}")
_ETAG = re.compile(r"[0-9A-Za-z_-]{1,128}")
"""An ETag as huggingface_hub keeps it (``W/`` and quotes removed): the Hub sends a git blob id or a
sha256; a proxy's own (``65f1a2b3-1c2``) passes too. Anything else is not an identifier."""
PULL_THREADS = 8
HUB_ANSWER_SECONDS = 15.0
"""How long a pull waits for the hub to answer one request before it gives up on the whole pull:
huggingface_hub retries a dead connection with backoff, which takes minutes per model."""
MAX_CONFIG_BYTES = 16 * 1024 * 1024
"""The largest ``config.json`` a pull reads (a model's is a few kB; label maps make the largest on
the Hub about 2 MB). Checked on the size the hub declares, and again on the bytes it sends."""
DOWNLOAD_SECONDS = 60.0
"""How long one download may take in all, however slowly the server sends it."""


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
    to. ``hub_cache``: huggingface_hub's cache folder (default: its own, ``HF_HUB_CACHE``), where a
    copy of that commit's file is read instead of downloading it again."""
    if not is_hub_id(model_id):
        raise ConfigSourceError(f"{model_id!r} is not a Hub model id (org/name)", source=model_id)
    endpoint = hub_endpoint()
    answer = _hub_answer(model_id, endpoint)
    content = _cached_config(model_id, answer.commit, hub_cache)
    origin = f"the hub cache's copy of {answer.commit[:12]}"
    if content is None:
        content, origin = _download(model_id, answer, endpoint), f"the hub at {endpoint}"
    try:
        if not isinstance(json.loads(content), dict):
            raise ValueError("not a JSON object")
    except (ValueError, RecursionError) as error:  # RecursionError: nested beyond the JSON decoder's stack
        raise ConfigSourceError(f"the {CONFIG_FILE} from {origin} is not a JSON object: {type(error).__name__}: "
                                f"{first_line(error)}; nothing was written", source=model_id) from error
    written = _write(configs_dir, model_id, content, revision=answer.commit)
    return Pulled(model_id=model_id, revision=answer.commit, config_file=written)


@dataclass(frozen=True, kw_only=True)
class HubAnswer:
    """What the hub said about ``config.json`` at ``main``, checked (:func:`_hub_answer`)."""

    commit: str
    """The 40-hex commit ``main`` resolves to."""
    location: str
    """Where the file's bytes are: the resolve URL, or the address a redirect named."""
    size: int | None


def _hub_answer(model_id: str, endpoint: str) -> HubAnswer:
    """The hub's metadata for the id's ``config.json``, or the error that names what is wrong with it."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_url

    try:
        metadata = get_hf_file_metadata(hf_hub_url(model_id, CONFIG_FILE, endpoint=endpoint),
                                        timeout=HUB_ANSWER_SECONDS, endpoint=endpoint)
    except Exception as error:  # huggingface_hub raises HTTP, OS and validation errors of many types
        raise ConfigSourceError(f"downloading {CONFIG_FILE} failed: {_brief(error)}", source=model_id) from error
    commit, etag, size = metadata.commit_hash, metadata.etag, metadata.size
    if commit is None or not _COMMIT.fullmatch(commit):
        raise _hostile(endpoint, model_id, "without the commit main resolves to (X-Repo-Commit)" if commit is None
                       else f"with {commit!r} as the commit main resolves to, which is not a 40-hex commit")
    if etag is not None and not _ETAG.fullmatch(etag):
        raise _hostile(endpoint, model_id, f"with the ETag {etag!r}, which is not an identifier")
    if size is not None and size > MAX_CONFIG_BYTES:
        raise _oversized(endpoint, model_id, f"declares {size:,} bytes")
    location = metadata.location
    if not _same_origin(location, endpoint) and urlsplit(location).scheme != "https":
        raise _hostile(endpoint, model_id, f"with a redirect to {location!r}: another host, and not over https")
    return HubAnswer(commit=commit, location=location, size=size)


def _cached_config(model_id: str, commit: str, hub_cache: Path | None) -> bytes | None:
    """huggingface_hub's cached copy of the file at ``commit``, read only where it resolves inside
    the model's cache folder (a link elsewhere is an error naming it); ``None`` when there is none."""
    from huggingface_hub import constants

    folder = Path(hub_cache or constants.HF_HUB_CACHE) / ("models--" + model_id.replace("/", "--"))
    pointer = folder / "snapshots" / commit / CONFIG_FILE
    if not os.path.lexists(pointer):
        return None
    try:
        target = pointer.resolve()
        inside = any(target.is_relative_to(root) for root in (folder.resolve(), (folder / "blobs").resolve()))
        if not inside or not target.is_file():
            raise ConfigSourceError(
                f"the hub cache's {pointer} resolves to {target}, which is not a file in that model's cache folder; "
                "nothing was copied. Delete the link (or the model's cache folder) and pull again", source=model_id)
        with target.open("rb") as handle:
            content = handle.read(MAX_CONFIG_BYTES + 1)
    except (OSError, RuntimeError) as error:  # RuntimeError: a symlink loop (Python before 3.13)
        raise ConfigSourceError(f"cannot read the hub cache's {pointer}: {error}; delete it and pull again",
                                source=model_id) from error
    if len(content) > MAX_CONFIG_BYTES:
        raise ConfigSourceError(f"the hub cache's {pointer} is over the {MAX_CONFIG_BYTES:,}-byte limit of a "
                                f"{CONFIG_FILE}; nothing was copied", source=model_id)
    return content


def _download(model_id: str, answer: HubAnswer, endpoint: str) -> bytes:
    """The file's bytes from ``answer.location``: no redirect followed, at most :data:`MAX_CONFIG_BYTES`
    read, within :data:`DOWNLOAD_SECONDS`; the token is sent to the hub's own origin only."""
    from huggingface_hub.utils import build_hf_headers, get_session

    headers = {**build_hf_headers(), "Accept-Encoding": "identity"}
    if not _same_origin(answer.location, endpoint):
        headers.pop("authorization", None)
    deadline = time.monotonic() + DOWNLOAD_SECONDS
    try:
        with get_session().stream("GET", answer.location, headers=headers, timeout=HUB_ANSWER_SECONDS,
                                  follow_redirects=False) as response:
            if response.status_code != 200:
                raise _hostile(endpoint, model_id, f"HTTP {response.status_code} to the download of a file its "
                                                   "metadata request had found")
            declared = response.headers.get("Content-Length", "")
            if declared.isdigit() and int(declared) > MAX_CONFIG_BYTES:
                raise _oversized(endpoint, model_id, f"sends {int(declared):,} bytes")
            return _read_bounded(response.iter_bytes(), model_id, endpoint, deadline)
    except ConfigSourceError:
        raise
    except Exception as error:  # the HTTP client's connection, timeout and protocol errors
        raise ConfigSourceError(f"downloading {CONFIG_FILE} failed: {_brief(error)}", source=model_id) from error


def _read_bounded(chunks: Iterator[bytes], model_id: str, endpoint: str, deadline: float) -> bytes:
    content = bytearray()
    for chunk in chunks:
        content += chunk
        if len(content) > MAX_CONFIG_BYTES:
            raise _hostile(endpoint, model_id, f"with a {CONFIG_FILE} longer than the {MAX_CONFIG_BYTES:,}-byte limit "
                                               "(the download stopped there)")
        if time.monotonic() > deadline:
            raise _hostile(endpoint, model_id, f"too slowly: {len(content):,} bytes in {DOWNLOAD_SECONDS:g} s")
    return bytes(content)


def _write(configs_dir: Path, model_id: str, content: bytes, *, revision: str) -> Path:
    """The config and its record, written where the id names, which must resolve inside ``configs_dir``."""
    folder = model_folder(configs_dir, model_id)
    try:
        resolved = folder.resolve()
        if not resolved.is_relative_to(configs_dir.resolve()):
            raise ConfigSourceError(f"{folder} resolves to {resolved}, outside the configs folder {configs_dir}; "
                                    "nothing was written", source=model_id)
        return write_pulled_config(configs_dir, model_id, content, revision=revision)
    except (OSError, RuntimeError) as error:  # RuntimeError: a symlink loop (Python before 3.13)
        raise ConfigSourceError(f"cannot write {folder / CONFIG_FILE}: {error}", source=model_id) from error


def _hostile(endpoint: str, model_id: str, what: str) -> ConfigSourceError:
    return ConfigSourceError(f"the hub at {endpoint} answered {what}; nothing was written. Check HF_ENDPOINT",
                             source=model_id)


def _oversized(endpoint: str, model_id: str, what: str) -> ConfigSourceError:
    return _hostile(endpoint, model_id, f"with a {CONFIG_FILE} that {what}, over the {MAX_CONFIG_BYTES:,}-byte limit")


def _same_origin(url: str, other: str) -> bool:
    def origin(address: str) -> tuple[str, str, int | None]:
        parts = urlsplit(address)
        return parts.scheme, (parts.hostname or "").lower(), parts.port or {"http": 80, "https": 443}.get(parts.scheme)

    return origin(url) == origin(other)


def _brief(error: Exception) -> str:
    first = first_line(error)
    return f"{type(error).__name__}: {first}" if first else type(error).__name__
