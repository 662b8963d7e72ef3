"""The README's quick start is the contract with a new user: CI must run exactly its test command
(and then the framework's environment, `.ci/framework_env`)."""

from __future__ import annotations

import os
import re

from tests.conftest import MAIN_TRANSFORMERS, REPO_ROOT, SNAPSHOT_TRANSFORMERS_VERSION


def quick_start_commands() -> list[str]:
    readme = (REPO_ROOT / "README.md").read_text()
    quick_start = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.*?)\n```", quick_start, flags=re.S)


def test_quick_start_has_exactly_two_commands_both_pinning_torch_first() -> None:
    """The main job runs where the bundled recipes train (nemo-automodel 0.7.0 with its transformers,
    which the snapshots name); the tests run on the newest transformers the range allows."""
    commands = quick_start_commands()
    assert len(commands) == 2
    for command, transformers in zip(commands, (SNAPSHOT_TRANSFORMERS_VERSION, MAIN_TRANSFORMERS)):
        assert "\n" not in command
        assert command.index("torch==2.14.1") < command.index(f"transformers=={transformers}") < command.index("-e '.[")
    assert "nemo-automodel==0.7.0" in commands[0] and "--no-deps" not in commands[0]
    assert commands[0].endswith("mmfreeze snapshot --check example_configs")


def test_the_test_command_adds_nemo_automodel_without_its_dependencies() -> None:
    """Tests here import nemo-automodel's functions; its own pin (transformers 5.18.0) must not
    replace the main environment's transformers."""
    command = quick_start_commands()[1]
    assert "pip install -q --no-deps nemo-automodel==0.7.0" in command
    assert command.index("pip install -q -e") < command.index("nemo-automodel") < command.index("-m pytest")


def test_ci_runs_the_readme_test_command_then_the_framework_environment_and_nothing_else() -> None:
    """The framework's environment installs in the background while the README's command runs; CI
    prints that install's output, fails if it failed, then runs the environment's checks."""
    ci_lines = [line for line in (REPO_ROOT / ".ci" / "run").read_text().splitlines()
                if line and not line.startswith(("#", "set ", "cd "))]
    readme_command = ci_lines.index(quick_start_commands()[1])
    assert 'bash .ci/framework_env install >"$install_log" 2>&1 &' in ci_lines[:readme_command]
    assert ci_lines[readme_command + 1:] == [
        'wait "$installing" && installed=0 || installed=$?',
        'cat "$install_log"',
        '[ "$installed" -eq 0 ] || { echo "the framework\'s environment did not install (exit $installed)" >&2; exit "$installed"; }',
        "bash .ci/framework_env check",
    ]
    assert not [line for line in ci_lines if "pytest" in line and line != quick_start_commands()[1]]


def test_the_framework_environment_is_the_main_jobs_and_runs_it() -> None:
    """`.ci/framework_env` installs what the README's main job installs, in the same folder, and
    runs that job (the bundled snapshots checked where they are made: exit 0 or CI fails)."""
    script = REPO_ROOT / ".ci" / "framework_env"
    text = script.read_text()
    main_job = quick_start_commands()[0]
    assert os.access(script, os.X_OK)
    assert "set -euo pipefail" in text and "VENV=.venv-framework" in text and main_job.startswith("python3 -m venv .venv-framework")
    for pin in ("torch==2.14.1", "torchvision==0.29.1", f"transformers=={SNAPSHOT_TRANSFORMERS_VERSION}", "nemo-automodel==0.7.0"):
        assert pin in text and pin in main_job
    assert "--no-deps" not in text
    assert "pip\" check" in text
    assert '"$VENV/bin/mmfreeze" snapshot --check example_configs\n' in text


def test_the_readme_and_the_training_page_give_the_corpus_native_counts() -> None:
    """The counts of bundled recipes nemo-automodel 0.7 runs natively (the file as it is, with its
    compiled sections) and of those that need the integration, each of those with the keys that
    decide it, computed from the corpus (the verdict itself is checked against the framework's
    parsers in tests/nemo/test_native_verdict.py)."""
    from mmfreeze.distributed.native import native_support
    from mmfreeze.recipes.recipe import read_yaml
    from tests.conftest import EXAMPLE_CONFIGS, recipes_under

    support = {path: native_support(read_yaml(path)) for path in recipes_under(EXAMPLE_CONFIGS)}
    verdicts = [found.verdict for found in support.values()]
    needs, native = verdicts.count("needs the integration"), verdicts.count("native")
    assert needs + native == len(verdicts)
    readme = " ".join((REPO_ROOT / "README.md").read_text().split())
    page = " ".join((REPO_ROOT / "docs" / "training-with-nemo-automodel.md").read_text().split())
    assert f"Of the {len(verdicts)} bundled recipes, {native} run natively. {needs} need" in readme
    assert f"Of the {len(verdicts)} bundled recipes, {needs} need the integration and {native} run natively" in page
    listed = {path for path, found in support.items() if found.verdict == "needs the integration"}
    for path in listed:
        assert f"- `{path.relative_to(EXAMPLE_CONFIGS).as_posix()}`: {', '.join(support[path].keys)}" in readme
    assert readme.count("- `") == len(listed), "the README lists exactly the recipes that need the integration"


def test_the_readme_is_short_enough_to_read_in_ten_minutes() -> None:
    """What it is, the two commands, the loop, the commands table; everything else is in docs/."""
    lines = (REPO_ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 200
    links = re.findall(r"\]\((docs/[^)#]+)", "\n".join(lines))
    assert links and all((REPO_ROOT / link).is_file() for link in links)