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


def assert_one_line(result: subprocess.CompletedProcess[str], endpoint: str, why: str) -> None:
    assert result.returncode == ExitCode.INPUT_ERROR
    assert result.stderr.strip().splitlines() == [
        f"error: HF_ENDPOINT: the hub at {endpoint} cannot be reached ({why}); nothing was pulled. Set HF_ENDPOINT "
        "to a hub this machine reaches, or put each config.json in the configs folder as <org>/<name>/config.json"
    ], result.stderr


def test_a_hub_that_refuses_the_connection_ends_the_pull_at_once_with_one_line(tmp_path: Path) -> None:
    endpoint = f"http://127.0.0.1:{closed_loopback_port()}"
    result, seconds = pull_from(team_repo(tmp_path), endpoint)
    assert_one_line(result, endpoint, "ConnectionRefusedError: [Errno 111] Connection refused")
    assert seconds < 10, f"the pull took {seconds:.1f} s against a closed port (huggingface_hub retries for minutes)"


@pytest.mark.slow  # it waits out the hub's silence by design
def test_a_hub_that_accepts_and_never_answers_ends_the_pull_within_a_minute_with_one_line(tmp_path: Path) -> None:
    with socket.socket() as silent:  # the kernel completes connections; nothing ever reads or answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        endpoint = "http://127.0.0.1:%d" % silent.getsockname()[1]
        result, seconds = pull_from(team_repo(tmp_path), endpoint)
    assert_one_line(result, endpoint, f"no answer within {HUB_ANSWER_SECONDS:g} s")
    assert seconds < 60, f"the pull took {seconds:.1f} s against a silent hub"
