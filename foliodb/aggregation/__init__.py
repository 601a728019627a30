"""FolioDB's aggregation framework: pipeline stages, accumulators and
window functions. See :mod:`foliodb.aggregation.pipeline`."""

from foliodb.aggregation.pipeline import STAGES, Pipeline, Pushdown, Stage, compile_pipeline

__all__ = ["STAGES", "Pipeline", "Pushdown", "Stage", "compile_pipeline"]
