"""Update operators, one small compiler each; importing registers them in
:data:`UPDATE_OPS`. See :mod:`foliodb.query.update` for how they combine."""

from foliodb.query.update_ops import arithmetic, arrays, bitwise, fields  # noqa: F401  (registers operators)
from foliodb.query.update_ops.core import UPDATE_OPS

__all__ = ["UPDATE_OPS"]
