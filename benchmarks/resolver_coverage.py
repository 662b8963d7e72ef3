"""Print how many multimodal transformers classes the resolver table verifies, and why others fail.

    python benchmarks/resolver_coverage.py

Exits non-zero when fewer than MINIMUM classes verify (fewer under a transformers release that does
not have every table class yet: the framework environment's 5.18.0 lacks 15 of them).
"""

from __future__ import annotations

import logging
import sys
import time

from mmfreeze.resolver import ARCHITECTURE_TABLE
from mmfreeze.resolver.coverage import candidate_classes, verify_candidate
from mmfreeze.versions import installed_version

MINIMUM = 100
MINIMUM_BY_RELEASE = {"5.18.0": MINIMUM - 15}


def main() -> int:
    logging.disable(logging.WARNING)  # transformers config chatter; heuristic warnings are collected
    started = time.perf_counter()
    candidates = candidate_classes()
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
    absent = sorted(set(ARCHITECTURE_TABLE) - {candidate.class_name for candidate in candidates})
    if absent:
        print(f"transformers {release} has no {len(absent)} table classes: {', '.join(absent)}")
    return 0 if verified >= MINIMUM_BY_RELEASE.get(release, MINIMUM) else 1


if __name__ == "__main__":
    sys.exit(main())
