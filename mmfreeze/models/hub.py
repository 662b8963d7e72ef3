"""Reading a model's ``config.json`` from a Hugging Face hub, and from huggingface_hub's cache,
with the hub's answer treated as data, never as a path (`mmfreeze configs pull`, ``--allow-network``).

Both read only the model's folder in the hub cache and the bytes the hub sends, whatever the
server says. So neither hands the answer to ``hf_hub_download`` (which names cache files after the
``ETag`` header, so one holding ``../`` writes elsewhere) or to ``try_to_load_from_cache`` (which
returns whatever a cache link resolves to). The metadata (``get_hf_file_metadata``) is checked and
at most :data:`MAX_CONFIG_BYTES` are read: a commit that is not a commit, an ``ETag`` that is not
an identifier, a body over the limit, a redirect to plain HTTP on another host are each an error
naming the server. A cached copy is used only where it resolves inside that model's cache folder.
"""

from __future__ import annotations

import json
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from mmfreeze.exceptions import ConfigSourceError, first_line
from mmfreeze.models.config_folder import CONFIG_FILE, is_hub_id

_COMMIT = re.compile(r"[0-9a-f]{40}")
_ETAG = re.compile(r"[0-9A-Za-z_-]{1,128}")
"""An ETag as huggingface_hub keeps it (``W/`` and quotes removed): the Hub sends a git blob id or a
sha256; a proxy's own (``65f1a2b3-1c2``) passes too. Anything else is not an identifier."""
HUB_ANSWER_SECONDS = 15.0
"""How long a pull waits for the hub to answer one request before it gives up on the whole pull:
huggingface_hub retries a dead connection with backoff, which takes minutes per model."""
MAX_CONFIG_BYTES = 16 * 1024 * 1024
"""The largest ``config.json`` read (a model's is a few kB; label maps make the largest on the Hub
about 2 MB). Checked on the size the hub declares, again on the bytes it sends, and on a cached copy."""
DOWNLOAD_SECONDS = 60.0
"""How long one download may take in all, however slowly the server sends it."""


@dataclass(frozen=True, kw_only=True)
class FetchedConfig:
    """A model's ``config.json`` as the hub (or the cache's copy of its commit) gave it, checked to be
    a JSON object."""

    model_id: str
    commit: str
    """The commit the hub resolved ``main`` to."""
    content: bytes
    origin: str
    """Where the bytes came from, for messages."""


def fetch_config(model_id: str, *, hub_cache: Path | None = None) -> FetchedConfig:
    """``model_id``'s ``config.json`` at ``main`` from the hub (``HF_ENDPOINT``, read at each call).
    ``hub_cache``: huggingface_hub's cache folder (default: its own, ``HF_HUB_CACHE``), where a copy
    of that commit's file is read instead of downloading it again."""
    if not is_hub_id(model_id):
        raise ConfigSourceError(f"{model_id!r} is not a Hub model id (org/name)", source=model_id)
    endpoint = hub_endpoint()
    answer = _hub_answer(model_id, endpoint)
    content = cached_config(model_id, answer.commit, hub_cache)
    origin = f"the hub cache's copy of {answer.commit[:12]}"
    if content is None:
        content, origin = _download(model_id, answer, endpoint), f"the hub at {endpoint}"
    _check_json_object(content, origin, model_id)
    return FetchedConfig(model_id=model_id, commit=answer.commit, content=content, origin=origin)


def cached_main_config(model_id: str, *, hub_cache: Path | None = None) -> FetchedConfig | None:
    """The cache's copy of ``model_id``'s ``config.json`` at the commit its ``refs/main`` records,
    offline; ``None`` when the cache has none."""
    if not is_hub_id(model_id):
        return None
    ref = _model_cache_folder(model_id, hub_cache) / "refs" / "main"
    try:
        commit = ref.read_text(encoding="ascii", errors="replace").strip()[:41] if ref.is_file() else ""
    except OSError:
        return None
    if not _COMMIT.fullmatch(commit):
        return None
    content = cached_config(model_id, commit, hub_cache)
    if content is None:
        return None
    origin = f"the hub cache's copy of {commit[:12]} ({hub_cache_folder(hub_cache)})"
    _check_json_object(content, origin, model_id)
    return FetchedConfig(model_id=model_id, commit=commit, content=content, origin=origin)


def hub_cache_folder(hub_cache: Path | None) -> Path:
    """``hub_cache``, else huggingface_hub's own cache folder (``HF_HUB_CACHE``, ``HF_HOME``/hub)."""
    from huggingface_hub import constants

    return Path(hub_cache or constants.HF_HUB_CACHE)


def _model_cache_folder(model_id: str, hub_cache: Path | None) -> Path:
    return hub_cache_folder(hub_cache) / ("models--" + model_id.replace("/", "--"))


def _check_json_object(content: bytes, origin: str, model_id: str) -> None:
    try:
        if not isinstance(json.loads(content), dict):
            raise ValueError("not a JSON object")
    except (ValueError, RecursionError) as error:  # RecursionError: nested beyond the JSON decoder's stack
        raise ConfigSourceError(f"the {CONFIG_FILE} from {origin} is not a JSON object: {type(error).__name__}: "
                                f"{first_line(error)}; nothing was written", source=model_id) from error


OFFLINE_VARIABLE = "HF_HUB_OFFLINE"


def hub_offline() -> bool:
    """Whether ``HF_HUB_OFFLINE`` asks for no hub request (read at each call, with huggingface_hub's
    own reading of a true value)."""
    return os.environ.get(OFFLINE_VARIABLE, "").upper() in {"1", "ON", "YES", "TRUE"}


def hub_endpoint() -> str:
    """Where configs are pulled from: ``HF_ENDPOINT`` (read at each call), else the Hugging Face Hub."""
    from huggingface_hub import constants

    return os.environ.get("HF_ENDPOINT") or constants.ENDPOINT


def hub_unreachable(endpoint: str, *, timeout: float = HUB_ANSWER_SECONDS) -> str | None:
    """Why ``endpoint`` cannot be reached, from one request made before any download (a refused
    connection, or no answer within ``timeout`` seconds); ``None`` when it answers (any HTTP status
    is an answer)."""
    try:
        with urllib.request.urlopen(urllib.request.Request(endpoint.rstrip("/") + "/", method="HEAD"), timeout=timeout):
            return None
    except urllib.error.HTTPError:
        return None
    except OSError as error:  # URLError (refused, unresolvable) and a read timeout alike
        reason = getattr(error, "reason", error)
        return f"no answer within {timeout:g} s" if isinstance(reason, TimeoutError) else f"{type(reason).__name__}: {reason}"


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


def cached_config(model_id: str, commit: str, hub_cache: Path | None) -> bytes | None:
    """huggingface_hub's cached copy of the file at ``commit``, read only where it resolves inside
    the model's cache folder (a link elsewhere is an error naming it); ``None`` when there is none."""
    folder = _model_cache_folder(model_id, hub_cache)
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
