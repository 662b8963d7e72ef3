"""Repository settings: finding the root, parsing [tool.mmfreeze], errors that say what is valid."""

from __future__ import annotations

from pathlib import Path

import pytest

from mmfreeze.exceptions import SettingsError
from mmfreeze.settings import find_root, find_settings

SETTINGS = """\
[project]
name = "team-recipes"

[tool.mmfreeze]
configs = "model_configs"
exclude = ["recipes/custom/**"]
snapshots = "ci/snapshots"

[tool.mmfreeze.allow_targets]
"team.models.VLM.from_pretrained" = "AutoModelForImageTextToText"
"""


def repo(tmp_path: Path, pyproject: str | None = SETTINGS, *, git: bool = True) -> Path:
    (tmp_path / "recipes" / "vlm").mkdir(parents=True)
    if git:
        (tmp_path / ".git").mkdir()
    if pyproject is not None:
        (tmp_path / "pyproject.toml").write_text(pyproject)
    return tmp_path


def test_settings_are_typed_and_paths_are_relative_to_the_root_from_any_folder(tmp_path: Path) -> None:
    root = repo(tmp_path).resolve()
    for cwd in (root, root / "recipes" / "vlm"):
        settings = find_settings([Path(".")], cwd=cwd)
        assert settings.root == root and settings.pyproject == root / "pyproject.toml"
        assert settings.configs == root / "model_configs" and settings.snapshots == root / "ci" / "snapshots"
        assert settings.exclude == ("recipes/custom/**",)
        assert dict(settings.allow_targets) == {"team.models.VLM.from_pretrained": "AutoModelForImageTextToText"}


def test_root_is_found_from_the_paths_not_the_working_directory(tmp_path: Path) -> None:
    root = repo(tmp_path / "repo").resolve()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert find_settings([root / "recipes" / "vlm"], cwd=elsewhere).root == root


def test_without_settings_the_git_root_applies_with_defaults(tmp_path: Path) -> None:
    root = repo(tmp_path, pyproject="[project]\nname = 'x'\n").resolve()
    (root / "recipes" / "pyproject.toml").write_text("[tool.black]\n")  # a nested project without settings
    settings = find_settings([Path("recipes/vlm")], cwd=root)
    assert (settings.root, settings.pyproject, settings.configs) == (root, None, None)
    assert settings.snapshots == root / "snapshots"


def test_the_walk_stops_at_the_repository_root(tmp_path: Path) -> None:
    """Settings of an enclosing folder never leak into a repository checked out below it."""
    (tmp_path / "pyproject.toml").write_text(SETTINGS)
    inner = repo(tmp_path / "inner", pyproject=None).resolve()
    assert find_root(inner / "recipes", cwd=inner) == (inner, None)


def test_outside_any_repository_the_nearest_pyproject_then_the_working_directory(tmp_path: Path) -> None:
    project = repo(tmp_path / "project", pyproject="[project]\nname = 'x'\n", git=False).resolve()
    assert find_root(project / "recipes" / "vlm", cwd=tmp_path) == (project, None)
    bare = tmp_path / "bare"
    bare.mkdir()
    assert find_root(bare, cwd=bare)[0] == bare


def test_command_line_values_override_settings(tmp_path: Path) -> None:
    settings = find_settings([], cwd=repo(tmp_path)).overridden(
        configs=Path("elsewhere"), allow_targets=[("team.models.VLM.from_pretrained", "AutoModelForCausalLM")]
    )
    assert settings.configs == Path("elsewhere").absolute()
    assert settings.allow_targets["team.models.VLM.from_pretrained"] == "AutoModelForCausalLM"


@pytest.mark.parametrize(("table", "key", "says"), [
    ('exlude = ["a"]', "tool.mmfreeze.exlude", "unknown setting (did you mean 'exclude'?); valid settings: allow_targets, builder, builder_fallback, configs, exclude, framework, model_folders, snapshots, world_size"),
    ("framework = 0.6", "tool.mmfreeze.framework", "expected one of '0.7', '0.6'; got 0.6"),
    ('exclude = "recipes/custom/**"', "tool.mmfreeze.exclude", "expected a list of globs"),
    ("configs = 3", "tool.mmfreeze.configs", "expected a folder path relative to the repository root"),
    ('snapshots = ""', "tool.mmfreeze.snapshots", "expected a folder path"),
    ('allow_targets = ["x"]', "tool.mmfreeze.allow_targets", "expected a table of `_target_`"),
    ('allow_targets = {"a.B.from_pretrained" = "LlavaForConditionalGeneration"}',
     "tool.mmfreeze.allow_targets.a.B.from_pretrained", "expected a transformers Auto class name"),
    ('model_folders = ["/mnt/models"]', "tool.mmfreeze.model_folders", "expected a table of name = \"folder\" entries"),
    ('model_folders = {"../x" = "/mnt/models"}', "tool.mmfreeze.model_folders", "names: letters, digits, - and _"),
])
def test_invalid_settings_name_the_file_the_key_and_what_is_valid(tmp_path: Path, table: str, key: str, says: str) -> None:
    root = repo(tmp_path, pyproject=f"[tool.mmfreeze]\n{table}\n")
    with pytest.raises(SettingsError) as caught:
        find_settings([], cwd=root)
    assert caught.value.source.endswith("pyproject.toml") and caught.value.key == key
    assert says in caught.value.message


def test_invalid_toml_is_reported_with_the_file(tmp_path: Path) -> None:
    root = repo(tmp_path, pyproject="[tool.mmfreeze\nconfigs = 'x'\n")
    with pytest.raises(SettingsError, match="not valid TOML"):
        find_settings([], cwd=root)


@pytest.mark.parametrize("key", ["snapshots", "configs"])
@pytest.mark.parametrize("value", ["../x", "/tmp/elsewhere", "linked"])
def test_a_folder_setting_that_resolves_outside_the_repository_is_refused_naming_the_key(
    tmp_path: Path, key: str, value: str,
) -> None:
    """Issue 48: `snapshots = "../x"` made `--update` write outside the repository, exit 0."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "linked").symlink_to(tmp_path)
    (root / "pyproject.toml").write_text(f'[tool.mmfreeze]\n{key} = "{value}"\n')
    with pytest.raises(SettingsError, match=rf"outside the repository {root}: a setting names a folder inside it") as raised:
        find_settings(cwd=root)
    assert raised.value.key == f"tool.mmfreeze.{key}"
