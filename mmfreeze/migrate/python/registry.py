"""The Python rules in the order they run (see :mod:`mmfreeze.migrate.rules` for why this order).

Each rule module has ``RULE`` and ``find(context) -> RuleEdits``: the edits it would make, the
sites it reports (file:line) and notes. Edits of different rules never overlap: MF102 skips every
call MF101 owns.
"""

from __future__ import annotations

from collections.abc import Callable

from mmfreeze.migrate.python import apply_parameter_freezing, freeze_config_kwarg
from mmfreeze.migrate.python.context import PythonContext
from mmfreeze.migrate.python.edits import RuleEdits
from mmfreeze.migrate.rules import Rule

PythonFind = Callable[[PythonContext], RuleEdits]

PYTHON_RULES: tuple[tuple[Rule, PythonFind], ...] = (
    # MF101 first: it owns every call of the legacy function (rewritten when proven, else reported).
    (apply_parameter_freezing.RULE, apply_parameter_freezing.find),
    # MF102 then reports what no rewrite can cover: freeze_config= on other callees, legacy key reads.
    (freeze_config_kwarg.RULE, freeze_config_kwarg.find),
)
