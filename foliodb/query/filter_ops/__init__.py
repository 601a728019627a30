"""Query operators, one small compiler each; importing registers them."""

from foliodb.query.filter_ops import array, bitwise, comparison, element, evaluation, geo, logical, schema  # noqa: F401
