"""The Python rules, run in :data:`mmfreeze.migrate.rules.RULES` order (the one place the order and
its reasons are stated).

Each rule module has ``RULE`` and ``find(context) -> RuleEdits``: the edits it would make, the
sites it reports (file:line) and notes. Edits of different rules never overlap: MF102 skips every
call MF101 owns.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

from mmfreeze.migrate.python import apply_parameter_freezing, freeze_config_kwarg
from mmfreeze.migrate.python.context import PythonContext
from mmfreeze.migrate.python.edits import RuleEdits
from mmfreeze.migrate.rules import RULES, Rule

PythonFind = Callable[[PythonContext], RuleEdits]

_MODULES: tuple[ModuleType, ...] = (apply_parameter_freezing, freeze_config_kwarg)
PYTHON_RULES: tuple[tuple[Rule, PythonFind], ...] = tuple(
    (rule, module.find) for rule in RULES for module in _MODULES if module.RULE == rule
)
