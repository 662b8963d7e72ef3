"""`configs pull` against a hostile hub: a real HTTP server on 127.0.0.1 that answers with
path-traversing headers, oversized or endless bodies and foreign redirects, and a hub cache whose
link resolves elsewhere (issue 40).

Whatever the server sends, a pull reads only the configs folder and the model's hub-cache folder
and writes only the configs folder; a hostile answer is an error naming the server, and nothing
is written. Before, huggingface_hub named the cache blob after the ETag, and mmfreeze copied
whatever the cache link resolved to (in the issue's probe, a credentials file).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from mmfreeze.cli.exit_codes import ExitCode
from mmfreeze.exceptions import ConfigSourceError
from mmfreeze.models.hub import MAX_CONFIG_BYTES
from mmfreeze.models.pull import pull_config
from tests.conftest import MMFREEZE
from tests.cli.test_explain import TINY_LLAVA
from tests.models.local_hub import LoopbackServer, git_blob_id

MODEL_ID = "tiny-org/Tiny-Llava"
CONFIG = json.dumps(TINY_LLAVA, indent=2).encode()
COMMIT = hashlib.sha1(MODEL_ID.encode()).hexdigest()
SECRET = b'{"aws_access_key_id": "AKIA-not-a-config", "token": "hunter2"}'


@dataclass
class Answer:
    """How the server answers ``HEAD``/``GET /{repo}/resolve/main/config.json``."""

    commit: str = COMMIT
    etag: str | None = None
    """Default: the content's git blob id, as the Hub sends it."""
    declared: int | None = -1
    """Content-Length of the HEAD answer; -1: the content's length, None: no header."""
    location: str | None = None
    """Set: HEAD answers 302 to this address."""
    content: bytes = CONFIG
    endless: bool = False
    """GET streams bytes without a length until the client hangs up (at most 64 MiB)."""
    get_length: int | None = None
    """Content-Length of the GET answer, when it should lie."""


@dataclass
class HostileHub(LoopbackServer):
    answer: Answer
    requests: list[tuple[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._serve()

    def gets(self) -> list[str]:
        return [path for method, path in self.requests if method == "GET"]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            timeout = 10

            def do_HEAD(self) -> None:  # noqa: N802 (http.server's naming)
                hub.requests.append(("HEAD", self.path))
                if "/resolve/" not in self.path:
                    return self._status(404)
                answer = hub.answer
                self.send_response(302 if answer.location else 200)
                if answer.location:
                    self.send_header("Location", answer.location)
                self.send_header("X-Repo-Commit", answer.commit)
                self.send_header("ETag", f'"{answer.etag if answer.etag is not None else git_blob_id(answer.content)}"')
                declared = len(answer.content) if answer.declared == -1 else answer.declared
                if declared is not None:
                    self.send_header("Content-Length", str(declared))
                self.end_headers()

            def do_GET(self) -> None:  # noqa: N802
                hub.requests.append(("GET", self.path))
                answer = hub.answer
                self.send_response(200)
                if not answer.endless:
                    self.send_header("Content-Length", str(answer.get_length or len(answer.content)))
                self.end_headers()
                try:
                    for chunk in _chunks(answer):
                        self.wfile.write(chunk)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client stopped reading: what a bounded reader does

            def _status(self, code: int) -> None:
                self.send_response(code)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

        return Handler


def _chunks(answer: Answer) -> Iterator[bytes]:
    if not answer.endless:
        yield answer.content
        return
    block = b" " * 65536
    for _ in range(1024):  # 64 MiB, four times the limit
        yield block


def tree(root: Path) -> dict[str, str]:
    """Every file and link under ``root``, with its content digest (a link: where it points)."""
    found = {}
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            found[path.relative_to(root).as_posix()] = "-> " + os.readlink(path)
        elif path.is_file():
            found[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


@pytest.fixture
def place(tmp_path: Path) -> Path:
    """A working folder holding a secret beside the hub cache (``hf``) and the configs folder."""
    (tmp_path / "secret.json").write_bytes(SECRET)
    (tmp_path / "hf").mkdir()
    return tmp_path


def pull_from(hub: HostileHub, place: Path, monkeypatch: pytest.MonkeyPatch) -> ConfigSourceError:
    monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
    before = tree(place)
    started = time.monotonic()
    with pytest.raises(ConfigSourceError) as caught:
        pull_config(MODEL_ID, place / "configs", hub_cache=place / "hf")
    assert time.monotonic() - started < 60
    assert tree(place) == before, "a refused pull wrote or linked something"
    assert caught.value.source == MODEL_ID
    return caught.value


@pytest.mark.parametrize("etag", ["../../../secret.json", "../../../escaped.json", "/etc/passwd", "a/b"])
def test_a_path_traversing_etag_is_an_error_naming_the_server_and_nothing_is_read_or_written(
    place: Path, monkeypatch: pytest.MonkeyPatch, etag: str,
) -> None:
    """``../../../secret.json`` from ``hf/models--tiny-org--Tiny-Llava/blobs/`` is the secret beside
    the cache: huggingface_hub found that "blob" present and linked the snapshot to it."""
    with HostileHub(Answer(etag=etag)) as hub:
        error = pull_from(hub, place, monkeypatch)
    assert error.message == (f"the hub at {hub.endpoint} answered with the ETag {etag!r}, which is not an identifier; "
                             "nothing was written. Check HF_ENDPOINT")
    assert hub.gets() == [] and not (place / "configs").exists() and not (place / "escaped.json").exists()


@pytest.mark.parametrize("commit", ["../../../secret", "main", "A" * 40])
def test_a_commit_header_that_is_not_a_commit_is_an_error_naming_the_server(
    place: Path, monkeypatch: pytest.MonkeyPatch, commit: str,
) -> None:
    with HostileHub(Answer(commit=commit)) as hub:
        error = pull_from(hub, place, monkeypatch)
    assert f"the hub at {hub.endpoint} answered with {commit!r} as the commit main resolves to" in error.message


def test_a_declared_size_over_the_limit_is_refused_before_any_download(place: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with HostileHub(Answer(declared=MAX_CONFIG_BYTES + 1)) as hub:
        error = pull_from(hub, place, monkeypatch)
    assert error.message.startswith(f"the hub at {hub.endpoint} answered with a config.json that declares "
                                    f"{MAX_CONFIG_BYTES + 1:,} bytes, over the {MAX_CONFIG_BYTES:,}-byte limit")
    assert hub.gets() == []


def test_an_endless_body_is_cut_at_the_limit(place: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The HEAD declares no size and the GET streams without a length: the reader stops itself."""
    with HostileHub(Answer(declared=None, endless=True)) as hub:
        error = pull_from(hub, place, monkeypatch)
    assert error.message.startswith(f"the hub at {hub.endpoint} answered with a config.json longer than the "
                                    f"{MAX_CONFIG_BYTES:,}-byte limit (the download stopped there)")
    assert len(hub.gets()) == 1


def test_a_get_that_announces_more_than_its_head_declared_is_refused(place: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with HostileHub(Answer(get_length=10**12)) as hub:
        error = pull_from(hub, place, monkeypatch)
    assert f"sends {10**12:,} bytes, over the {MAX_CONFIG_BYTES:,}-byte limit" in error.message


@pytest.mark.parametrize("location", ["http://169.254.169.254/latest/meta-data/iam/security-credentials/role",
                                      "http://127.0.0.2:9/config.json"])
def test_a_redirect_to_plain_http_on_another_host_is_refused(
    place: Path, monkeypatch: pytest.MonkeyPatch, location: str,
) -> None:
    with HostileHub(Answer(location=location)) as hub:
        error = pull_from(hub, place, monkeypatch)
    assert f"the hub at {hub.endpoint} answered with a redirect to {location!r}" in error.message


def test_a_body_nested_beyond_the_json_decoders_stack_is_not_a_config(place: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with HostileHub(Answer(content=b"[" * 200_000)) as hub:
        error = pull_from(hub, place, monkeypatch)
    assert f"the config.json from the hub at {hub.endpoint} is not a JSON object: RecursionError" in error.message


def test_a_cache_link_resolving_outside_the_cache_is_an_error_and_nothing_is_copied(
    place: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    snapshot = place / "hf" / "models--tiny-org--Tiny-Llava" / "snapshots" / COMMIT
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").symlink_to(os.path.relpath(place / "secret.json", snapshot))
    with HostileHub(Answer()) as hub:
        error = pull_from(hub, place, monkeypatch)
    assert f"the hub cache's {snapshot / 'config.json'} resolves to {place / 'secret.json'}" in error.message
    assert "nothing was copied" in error.message and hub.gets() == []


def test_a_cached_copy_laid_out_as_huggingface_hub_does_is_used_without_a_download(
    place: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    folder = place / "hf" / "models--tiny-org--Tiny-Llava"
    (folder / "blobs").mkdir(parents=True)
    (folder / "blobs" / git_blob_id(CONFIG)).write_bytes(CONFIG)
    (folder / "snapshots" / COMMIT).mkdir(parents=True)
    (folder / "snapshots" / COMMIT / "config.json").symlink_to(f"../../blobs/{git_blob_id(CONFIG)}")
    with HostileHub(Answer()) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
        pulled = pull_config(MODEL_ID, place / "configs", hub_cache=place / "hf")
    assert hub.gets() == [] and pulled.revision == COMMIT
    assert pulled.config_file.read_bytes() == CONFIG and pulled.config_file.is_relative_to(place / "configs")


def test_a_configs_folder_entry_linked_outside_is_not_written_through(place: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (place / "configs").mkdir()
    (place / "elsewhere").mkdir()
    (place / "configs" / "tiny-org").symlink_to(place / "elsewhere")
    with HostileHub(Answer()) as hub:
        error = pull_from(hub, place, monkeypatch)
    assert "outside the configs folder" in error.message and list((place / "elsewhere").iterdir()) == []


def team_repo(root: Path) -> Path:
    (root / ".git").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[tool.mmfreeze]\nconfigs = "model_configs"\n')
    (root / "recipes").mkdir()
    (root / "recipes" / "a.yaml").write_text(
        "model:\n  _target_: nemo_automodel.NeMoAutoModelForImageTextToText.from_pretrained\n"
        f"  pretrained_model_name_or_path: {MODEL_ID}\nfreeze_config:\n  vision: {{tower: true}}\n")
    return root


@pytest.mark.parametrize(("answer", "says"), [
    (Answer(etag="../../../../secret.json"), "answered with the ETag '../../../../secret.json', which is not an identifier"),
    (Answer(declared=None, endless=True),
     f"answered with a config.json longer than the {MAX_CONFIG_BYTES:,}-byte limit (the download stopped there)"),
], ids=["etag", "endless"])
def test_configs_pull_against_a_hostile_hub_exits_3_naming_the_server(tmp_path: Path, answer: Answer, says: str) -> None:
    repo = team_repo(tmp_path / "repo")
    (tmp_path / "secret.json").write_bytes(SECRET)
    # HF_HOME/hub/models--tiny-org--Tiny-Llava/blobs/../../../../secret.json is tmp_path/secret.json
    env = {**os.environ, "CI": "true", "HF_HOME": str(tmp_path / "hf-home")}
    with HostileHub(answer) as hub:
        env["HF_ENDPOINT"] = hub.endpoint
        result = subprocess.run([*MMFREEZE, "configs", "pull", "recipes"], cwd=repo, env=env, capture_output=True,
                                text=True, timeout=300)
    assert result.returncode == ExitCode.INPUT_ERROR, result.stdout + result.stderr
    flat = " ".join(result.stderr.split())
    assert f"error: {MODEL_ID}: the hub at {hub.endpoint} {says}; nothing was written. Check HF_ENDPOINT" in flat, flat
    assert "0 pulled, 1 failed" in flat and "Traceback" not in flat
    assert not (repo / "model_configs").exists()
    assert not [path for path in (tmp_path / "hf-home" / "hub").rglob("*") if path.is_file()], "nor in the hub cache"
    assert (tmp_path / "secret.json").read_bytes() == SECRET


def test_snapshot_allow_network_against_a_hostile_hub_is_an_input_error_naming_the_recipe_and_server(
    tmp_path: Path,
) -> None:
    """``--allow-network`` reads a config through the same checked client as `configs pull` (it used
    ``hf_hub_download``, which stored the download where the ETag pointed)."""
    repo = team_repo(tmp_path / "repo")
    (tmp_path / "secret.json").write_bytes(SECRET)
    env = {**os.environ, "CI": "true", "HF_HOME": str(tmp_path / "hf-home")}
    with HostileHub(Answer(etag="../../../../secret.json")) as hub:
        env["HF_ENDPOINT"] = hub.endpoint
        result = subprocess.run([*MMFREEZE, "snapshot", "--check", "--allow-network", "recipes"], cwd=repo, env=env,
                                capture_output=True, text=True, timeout=300)
    assert result.returncode == ExitCode.INPUT_ERROR, result.stdout + result.stderr
    flat = " ".join((result.stdout + result.stderr).split())
    assert (f"recipes/a.yaml: model.pretrained_model_name_or_path: the hub at {hub.endpoint} answered with the ETag "
            "'../../../../secret.json', which is not an identifier") in flat, flat
    assert "Traceback" not in flat
    assert not [path for path in hub.gets() if "/resolve/" in path], "the file was never downloaded"
    assert not [path for path in (tmp_path / "hf-home" / "hub").rglob("*") if path.is_file()]
    assert (tmp_path / "secret.json").read_bytes() == SECRET


def test_an_offline_read_of_the_hub_cache_never_follows_a_link_outside_it(place: Path) -> None:
    """The HF-cache source (no network) reads ``refs/main`` and that commit's copy, and refuses a link
    that resolves outside the model's cache folder, as a pull does."""
    from mmfreeze.models.hub import cached_main_config

    folder = place / "hf" / "models--tiny-org--Tiny-Llava"
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text(COMMIT)
    (folder / "snapshots" / COMMIT).mkdir(parents=True)
    (folder / "snapshots" / COMMIT / "config.json").symlink_to(os.path.relpath(place / "secret.json", folder / "snapshots" / COMMIT))
    with pytest.raises(ConfigSourceError, match="resolves to .*secret.json, which is not a file in that model's cache folder"):
        cached_main_config(MODEL_ID, hub_cache=place / "hf")
    (folder / "refs" / "main").write_text("../../../secret")
    assert cached_main_config(MODEL_ID, hub_cache=place / "hf") is None, "a ref that is not a commit names no copy"
