"""What a compiled section is compiled for and proven on (kept light: a warm snapshot run imports it)."""

from __future__ import annotations

from dataclasses import dataclass

from mmfreeze.boundary.releases import FrameworkRules
from mmfreeze.versions import installed_version


@dataclass(frozen=True, kw_only=True)
class CompileTarget:
    """What a compiled section is proven on: the release's rules, the transformers release and the builder."""

    release: str
    transformers: str
    builder: str
    """The builder's label (``nemo-automodel 0.7.0``: the framework's own classes; ``transformers``)."""

    def describe(self) -> str:
        return made_for(f"nemo-automodel {self.release}", self.transformers, self.builder)


def made_for(framework: str, transformers: str, builder: str) -> str:
    """Where a section was compiled, or a snapshot made, as ``compiled_for`` says it
    (``nemo-automodel 0.7, transformers 5.18.0, builder nemo-automodel 0.7.0``)."""
    return f"{framework}, transformers {transformers}, builder {builder}"


def release_of(compiled_for: str) -> str:
    """The release a ``compiled_for`` record names (``nemo-automodel 0.7``): what must match everywhere."""
    return compiled_for.split(",")[0]


def compile_target(rules: FrameworkRules, builder_label: str) -> CompileTarget:
    """This environment's target: the repository's release, the installed transformers, the run's builder."""
    return CompileTarget(release=rules.release, transformers=installed_version("transformers"), builder=builder_label)
