"""The stage compilers, one module per stage or small family; importing
this package registers them all in :data:`foliodb.aggregation.pipeline.STAGES`."""

from foliodb.aggregation.stages import (  # noqa: F401
    bucket,
    densify,
    facet,
    fill,
    fusion,
    geo_near,
    group,
    lookup,
    match,
    misc,
    out,
    project,
    search,
    sessions,
    sort,
    text_search,
    unpack,
    unwind,
    window,
)
