"""The errors mmfreeze reports to a user.

Every error a user can cause derives from :class:`MmfreezeError` and carries the file and the key
it is about, so the CLI can print one line that says where and what, never a traceback. Low-level
errors (YAML, transformers, torch) are translated with ``raise ... from e`` where they happen.
"""

from __future__ import annotations


class MmfreezeError(Exception):
    """Base class: a problem with user input or environment, reported as one clear message."""

    def __init__(self, message: str, *, source: str | None = None, key: str | None = None) -> None:
        self.message = message
        self.source = source
        self.key = key
        super().__init__(self.__str__())

    def __reduce__(self) -> tuple[object, ...]:
        # Errors cross process boundaries (parallel model builds): keep source and key.
        return (_rebuild, (type(self), self.message, self.source, self.key))

    def __str__(self) -> str:
        where = ": ".join(part for part in (self.source, self.key) if part)
        return f"{where}: {self.message}" if where else self.message


def first_line(error: BaseException) -> str:
    """An exception's first non-blank line: library messages may start with a newline, and add
    request ids, URLs or every valid option on the lines below."""
    return next((line.strip() for line in str(error).splitlines() if line.strip()), "")


def _rebuild(cls: type[MmfreezeError], message: str, source: str | None, key: str | None) -> MmfreezeError:
    return cls(message, source=source, key=key)


class SettingsError(MmfreezeError):
    """The repository's `[tool.mmfreeze]` settings in pyproject.toml are invalid."""


class RecipeError(MmfreezeError):
    """A recipe file cannot be read: YAML syntax, missing `model:` section, bad `_target_`."""


class ConfigSourceError(MmfreezeError):
    """No model config could be found for a model id, or the config found is invalid."""


class MissingModelConfigError(ConfigSourceError):
    """No source has a config for ``model_id``: batch commands list these ids once, grouped."""

    def __init__(self, message: str, *, model_id: str, source: str | None = None, key: str | None = None) -> None:
        self.model_id = model_id
        super().__init__(message, source=source, key=key)

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_missing, (self.message, self.model_id, self.source, self.key))


def _rebuild_missing(message: str, model_id: str, source: str | None, key: str | None) -> MissingModelConfigError:
    return MissingModelConfigError(message, model_id=model_id, source=source, key=key)


class ModelBuildError(MmfreezeError):
    """transformers rejected a config or failed to build the model on the meta device."""


class NoTransformersClass(ModelBuildError):
    """transformers has no class for a config's model type under the Auto class asked for: a fact of
    the config, the Auto class and the installed release, cached like a structure."""


class EnvironmentBuildError(ModelBuildError):
    """A build failed because of this machine, not the recipe: a package that does not import,
    memory, a worker process that died. Never cached: the next run, with the cause fixed, builds."""


class ResolverError(MmfreezeError):
    """Multimodal module declarations or overrides do not fit the model."""


class FreezeConfigError(MmfreezeError):
    """A `freeze_config` section is invalid for the new engine."""


class DistributedConfigError(MmfreezeError):
    """A `distributed.multimodal` section is invalid or unsafe for the model and mesh."""


class IntegrationError(MmfreezeError):
    """The nemo-automodel integration cannot be installed, or a recipe cannot run through it."""


class MigrationError(MmfreezeError):
    """A file cannot be migrated safely."""


class NoNewVocabularyEquivalent(MigrationError):
    """A valid framework-vocabulary section means what the new vocabulary cannot say (it unfreezes
    what PEFT or the model froze): it stays as it is, which snapshots and the integration support."""


class NotNativelyExpressible(MigrationError):
    """The release's own `freeze_config` cannot state a frozen set (a parameter on the model's root
    that must change, a tied weight shared across modules): the recipe keeps the runtime integration."""


class CompiledSectionError(MmfreezeError):
    """A recipe's compiled `freeze_config` or rates are not what its `mmfreeze:` source compiles to."""


class SnapshotError(MmfreezeError):
    """Snapshot files are unreadable or inconsistent."""


class FrozenSetMismatchError(MmfreezeError):
    """A live model (or its optimizer, or another rank) does not match the recipe's accepted snapshot.

    Raised by :func:`mmfreeze.verify_frozen_set`; ``details`` holds the structured findings
    (:class:`mmfreeze.guard.report.GuardReport`) in the raising process, ``None`` after pickling.
    """

    def __init__(
        self, message: str, *, source: str | None = None, key: str | None = None, details: object | None = None
    ) -> None:
        super().__init__(message, source=source, key=key)
        self.details = details
