"""`mmfreeze configs pull` end to end, against a real HTTP hub on 127.0.0.1 (``HF_ENDPOINT``)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

from mmfreeze.cli.exit_codes import ExitCode
from mmfreeze.models.hub import HUB_ANSWER_SECONDS
from tests.conftest import MMFREEZE
from tests.cli.test_explain import TINY_LLAVA
from tests.models.local_hub import LocalHub

RECIPE = """\
model:
  _target_: nemo_automodel.NeMoAutoModelForImageTextToText.from_pretrained
  pretrained_model_name_or_path: {}
freeze_config:
  vision: {{tower: true}}
"""
CONFIG = json.dumps(TINY_LLAVA, indent=2).encode()


def run(cwd: Path, *args: str, hub: LocalHub | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CI": "true", "HF_HOME": str(cwd.parent / ".hf-home")}
    env.pop("HF_ENDPOINT", None)
    if hub is not None:
        env["HF_ENDPOINT"] = hub.endpoint
    return subprocess.run([*MMFREEZE, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def team_repo(root: Path) -> Path:
    (root / ".git").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[tool.mmfreeze]\nconfigs = "model_configs"\n')
    for name, model_id in {"vlm/a.yaml": "tiny-org/Tiny-Llava", "vlm/b.yaml": "TINY-ORG/tiny-llava",
                           "vlm/c.yaml": "Qwen/Qwen2-VL-2B-Instruct"}.items():
        (root / "recipes" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "recipes" / name).write_text(RECIPE.format(model_id))
    return root


def test_pull_writes_the_layout_with_revisions_and_a_second_pull_fetches_nothing(tmp_path: Path) -> None:
    repo = team_repo(tmp_path)
    with LocalHub({"tiny-org/Tiny-Llava": {"config.json": CONFIG}}) as hub:
        first = run(repo / "recipes", "configs", "pull", ".", hub=hub)
        assert first.returncode == ExitCode.OK, first.stdout + first.stderr
        assert len(hub.downloads()) == 1  # two spellings of one id, one registry model: one download
        requests_after_first = len(hub.file_requests())
        second = run(repo, "configs", "pull", "recipes", hub=hub)
        assert second.returncode == ExitCode.OK, second.stdout + second.stderr
        assert len(hub.file_requests()) == requests_after_first  # not even a HEAD
    folder = repo / "model_configs" / "tiny-org" / "Tiny-Llava"
    assert (folder / "config.json").read_bytes() == CONFIG
    record = json.loads((folder / "mmfreeze.json").read_text())
    assert record["model_id"] == "tiny-org/Tiny-Llava" and record["revision"] == hub.commit_of("tiny-org/Tiny-Llava")
    assert f"pulled tiny-org/Tiny-Llava @ {record['revision'][:12]}" in first.stdout
    assert "1 pulled, 0 failed, 1 already available" in first.stderr
    assert "0 pulled, 0 failed, 2 already available" in second.stderr


@pytest.mark.slow  # three mmfreeze processes and a hub
def test_after_a_pull_the_snapshot_check_needs_no_network(tmp_path: Path) -> None:
    repo = team_repo(tmp_path)
    offline = run(repo, "snapshot", "--update", "recipes")
    assert offline.returncode == ExitCode.INPUT_ERROR
    assert "1 model id has no config: tiny-org/Tiny-Llava (2 recipes)" in offline.stderr
    assert "mmfreeze configs pull recipes" in offline.stderr
    with LocalHub({"tiny-org/Tiny-Llava": {"config.json": CONFIG}}) as hub:
        assert run(repo, "configs", "pull", "recipes", hub=hub).returncode == ExitCode.OK
    result = run(repo, "snapshot", "--update", "recipes")
    assert result.returncode == ExitCode.OK, result.stdout + result.stderr
    assert (repo / "snapshots" / "recipes" / "vlm" / "b.yaml.frozen.txt").is_file()


def test_an_id_the_hub_lacks_fails_the_pull_and_the_others_are_still_written(tmp_path: Path) -> None:
    repo = team_repo(tmp_path)
    (repo / "recipes" / "vlm" / "d.yaml").write_text(RECIPE.format("nobody/nothing"))
    with LocalHub({"tiny-org/Tiny-Llava": {"config.json": CONFIG}}) as hub:
        result = run(repo, "configs", "pull", "recipes", hub=hub)
    assert result.returncode == ExitCode.INPUT_ERROR
    assert "nobody/nothing: downloading config.json failed: RepositoryNotFoundError" in result.stderr
    assert (repo / "model_configs" / "tiny-org" / "Tiny-Llava" / "config.json").is_file()


def test_pull_without_a_configs_folder_is_a_usage_error(tmp_path: Path) -> None:
    repo = team_repo(tmp_path)
    (repo / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    result = run(repo, "configs", "pull", "recipes")
    assert result.returncode == ExitCode.USAGE and "set `configs = \"model_configs\"`" in result.stderr


def closed_loopback_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # closed on exit: connecting to it is refused


def pull_from(repo: Path, endpoint: str) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {**os.environ, "CI": "true", "HF_HOME": str(repo.parent / ".hf-home"), "HF_ENDPOINT": endpoint}
    started = time.monotonic()
    result = subprocess.run([*MMFREEZE, "configs", "pull", "recipes"], cwd=repo, env=env,
                            capture_output=True, text=True, timeout=300)
    return result, time.monotonic() - started


def assert_sent_to_the_empty_cache(result: subprocess.CompletedProcess[str], repo: Path, endpoint: str, why: str) -> None:
    """An unreachable hub sends the pull to the hub cache, said once; the id the (empty) cache lacks fails, named."""
    cache = repo.parent / ".hf-home" / "hub"
    assert result.returncode == ExitCode.INPUT_ERROR
    lines = result.stderr.strip().splitlines()
    assert lines[0] == (f"the hub at {endpoint} cannot be reached ({why}): configs are copied from the hub cache "
                        f"{cache} instead. Set HF_ENDPOINT to a hub this machine reaches to pull from a hub")
    assert lines[1].startswith(f"error: tiny-org/Tiny-Llava: the hub cache {cache} has no config.json of this id"), lines
    assert lines[2:] == ["configs: 0 pulled, 1 failed, 1 already available (into model_configs)"], lines


@pytest.mark.slow  # it waits out the hub's silence by design
def test_a_hub_that_accepts_and_never_answers_sends_the_pull_to_the_hub_cache_within_a_minute(tmp_path: Path) -> None:
    with socket.socket() as silent:  # the kernel completes connections; nothing ever reads or answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        endpoint = "http://127.0.0.1:%d" % silent.getsockname()[1]
        repo = team_repo(tmp_path)
        result, seconds = pull_from(repo, endpoint)
    assert_sent_to_the_empty_cache(result, repo, endpoint, f"no answer within {HUB_ANSWER_SECONDS:g} s")
    assert seconds < 60, f"the pull took {seconds:.1f} s against a silent hub"


def fill_hub_cache(hf_home: Path, hub: LocalHub, model_id: str) -> None:
    """The machine's Hugging Face cache as huggingface_hub itself lays it out: blobs, a snapshot
    link, refs/main, written by its own download from the loopback hub."""
    from huggingface_hub import hf_hub_download

    hf_hub_download(model_id, "config.json", cache_dir=hf_home / "hub", endpoint=hub.endpoint)


@pytest.mark.parametrize("offline", ["HF_HUB_OFFLINE=1", "hub unreachable"])
def test_an_offline_pull_copies_the_hub_caches_config_and_records_it_came_from_the_cache(
    tmp_path: Path, offline: str,
) -> None:
    repo = team_repo(tmp_path)
    with LocalHub({"tiny-org/Tiny-Llava": {"config.json": CONFIG}}) as hub:
        fill_hub_cache(tmp_path / ".hf-home", hub, "tiny-org/Tiny-Llava")
        commit = hub.commit_of("tiny-org/Tiny-Llava")
    env = {**os.environ, "CI": "true", "HF_HOME": str(tmp_path / ".hf-home"),
           "HF_ENDPOINT": f"http://127.0.0.1:{closed_loopback_port()}"}
    if offline == "HF_HUB_OFFLINE=1":
        env["HF_HUB_OFFLINE"] = "1"
    result = subprocess.run([*MMFREEZE, "configs", "pull", "recipes"], cwd=repo, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == ExitCode.OK, result.stdout + result.stderr
    said = ("HF_HUB_OFFLINE is set: configs are copied from the hub cache" if offline == "HF_HUB_OFFLINE=1"
            else "cannot be reached (ConnectionRefusedError")
    assert said in result.stderr.splitlines()[0]
    assert f"pulled tiny-org/Tiny-Llava @ {commit[:12]} from the hub cache -> " in result.stdout
    folder = repo / "model_configs" / "tiny-org" / "Tiny-Llava"
    assert (folder / "config.json").read_bytes() == CONFIG
    record = json.loads((folder / "mmfreeze.json").read_text())
    assert record == {"model_id": "tiny-org/Tiny-Llava", "revision": commit, "sha256": record["sha256"],
                      "source": "hf-cache"}


def test_a_configs_entrys_provenance_says_where_it_came_from_never_published(tmp_path: Path) -> None:
    from mmfreeze.models.config_folder import write_pulled_config
    from mmfreeze.models.config_sources import find_model_config
    from mmfreeze.snapshots.format import describe_config_source

    def described(model_id: str) -> str:
        found = find_model_config(model_id, configs_dir=tmp_path / "configs")
        return describe_config_source(found.kind, found.provenance)

    write_pulled_config(tmp_path / "configs", "org/from-hub", CONFIG, revision="a" * 40, source="hub")
    write_pulled_config(tmp_path / "configs", "org/from-cache", CONFIG, revision="b" * 40, source="hf-cache")
    (tmp_path / "configs" / "org" / "by-hand").mkdir()
    (tmp_path / "configs" / "org" / "by-hand" / "config.json").write_bytes(CONFIG)
    edited = tmp_path / "configs" / "org" / "from-hub-edited"
    write_pulled_config(tmp_path / "configs", "org/from-hub-edited", CONFIG, revision="c" * 40, source="hub")
    (edited / "config.json").write_bytes(CONFIG + b"\n")
    assert [described(name) for name in ("org/from-hub", "org/from-cache", "org/by-hand", "org/from-hub-edited")] == [
        "configs (hub)", "configs (hf-cache)", "configs (local)", "configs (local)"]
