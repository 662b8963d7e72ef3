"""Print how many multimodal transformers classes the resolver table verifies, and why others fail.

    python benchmarks/resolver_coverage.py

Exits non-zero when fewer than MINIMUM classes verify.
"""

from __future__ import annotations

import logging
import sys
import time

from mmfreeze.resolver.coverage import candidate_classes, verify_candidate

MINIMUM = 100


def main() -> int:
    logging.disable(logging.WARNING)  # transformers config chatter; heuristic warnings are collected
    started = time.perf_counter()
    results = [verify_candidate(candidate) for candidate in candidate_classes()]
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
    return 0 if verified >= MINIMUM else 1


if __name__ == "__main__":
    sys.exit(main())
