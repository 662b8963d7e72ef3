"""Print how many multimodal transformers classes the resolver table verifies, and why others fail;
then, separately, the classes NeMo AutoModel builds itself (``builder = framework``).

    python benchmarks/resolver_coverage.py                     # transformers classes (+ framework ones when it can)
    .venv-framework/bin/python benchmarks/resolver_coverage.py  # both
    python benchmarks/resolver_coverage.py --smoke             # CI: a few classes, no floor judged

Exits non-zero when fewer than MINIMUM transformers classes verify (fewer under a transformers
release that does not have every table class yet: the framework environment's 5.18.0 lacks 15 of
them), or, where the framework is checked, fewer than FRAMEWORK_MINIMUM of its multimodal classes.
The framework's classes are checked only where mmfreeze's ``auto`` builder would use the framework
(nemo-automodel installed with the transformers it requires); elsewhere the output says why not.
``--smoke`` checks that the script runs on a few classes of each kind: the floor over every table
entry is a test already (tests/resolver/test_table_coverage.py), and CI runs that one.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

from mmfreeze.models.framework import choose_builder
from mmfreeze.resolver import ARCHITECTURE_TABLE
from mmfreeze.resolver.table_framework import TABLE as FRAMEWORK_ONLY
from mmfreeze.versions import installed_version

sys.path.insert(0, str(Path(__file__).resolve().parent))

from resolver_checks import (  # noqa: E402
    candidate_classes,
    framework_architectures,
    verify_candidate,
    verify_framework_architecture,
)

MINIMUM = 100
MINIMUM_BY_RELEASE = {"5.18.0": MINIMUM - 15}
FRAMEWORK_MINIMUM = 10
SMOKE_CLASSES = 3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help=f"the first {SMOKE_CLASSES} classes of each kind, no floor")
    smoke = parser.parse_args().smoke
    logging.disable(logging.WARNING)  # transformers config chatter; heuristic warnings are collected
    started = time.perf_counter()
    candidates = candidate_classes()[:SMOKE_CLASSES] if smoke else candidate_classes()
    results = [verify_candidate(candidate) for candidate in candidates]
    failed = [result for result in results if not result.verified]
    for result in failed:
        print(f"FAIL {result.candidate.class_name} ({result.candidate.model_type}): {'; '.join(result.problems)}")
    multimodal = [result for result in results if result.candidate.multimodal]
    verified = sum(result.verified for result in multimodal)
    text_only = sum(result.verified for result in results if not result.candidate.multimodal)
    print(
        f"verified {verified} of {len(multimodal)} multimodal candidate classes "
        f"(+{text_only} text-only table entries) in {time.perf_counter() - started:.1f}s"
    )
    release = installed_version("transformers")
    if smoke:  # the floors are judged over every class, never over a few
        report_framework(smoke=True)
        return 0
    absent = sorted(set(ARCHITECTURE_TABLE) - set(FRAMEWORK_ONLY) - {candidate.class_name for candidate in candidates})
    if absent:
        print(f"transformers {release} has no {len(absent)} table classes: {', '.join(absent)}")
    transformers_ok = verified >= MINIMUM_BY_RELEASE.get(release, MINIMUM)
    return 0 if transformers_ok and report_framework(smoke=False) else 1


def report_framework(*, smoke: bool) -> bool:
    """The framework's own classes, reported apart; ``False`` when too few multimodal ones verify."""
    choice = choose_builder("auto")
    if choice.kind != "framework":
        print(f"framework classes: not checked here ({choice.reason}); run it in .venv-framework")
        return True
    started = time.perf_counter()
    architectures = framework_architectures()[:SMOKE_CLASSES] if smoke else framework_architectures()
    results = [verify_framework_architecture(architecture) for architecture in architectures]
    for result in results:
        if not result.built:
            print(f"FRAMEWORK NOT BUILT {result.architecture}: {'; '.join(result.problems)}")
        elif result.problems:
            print(f"FRAMEWORK FAIL {result.architecture} -> {result.class_name} ({result.config}): {'; '.join(result.problems)}")
    built = [result for result in results if result.built]
    multimodal = [result for result in built if result.modules]
    verified = sum(result.verified for result in multimodal)
    print(
        f"framework ({choice.label}): {len(built)} of {len(results)} architectures build on meta from a bundled "
        f"config; verified {verified} of {len(multimodal)} multimodal classes "
        f"(+{sum(r.verified for r in built if not r.modules)} text-only) in {time.perf_counter() - started:.1f}s"
    )
    return verified >= FRAMEWORK_MINIMUM


if __name__ == "__main__":
    sys.exit(main())
