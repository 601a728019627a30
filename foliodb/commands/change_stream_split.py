"""``$changeStreamSplitLargeEvent``: a change event too large for BSON, in fragments (MongoDB 7.0+).

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/changeStreamSplitLargeEvent/
and mongod's document_source_change_stream_split_large_event.cpp, change_stream_split_event_helpers.cpp:

- The stage takes ``{}`` (7182800) and must be the change stream pipeline's last stage (7182802); in any
  other pipeline it is IllegalOperation.
- An event whose BSON exceeds 16 MB + 8 KB (mongod's BSONObjMaxInternalSize less 8 KB) is split: its
  fields but ``_id``, ordered by their BSON size and then name, fill fragments greedily, each at most
  that limit less the size of the resume token. Each fragment is ``{_id: <its token>, splitEvent:
  {fragment: n, of: total}, <fields>}``; the token is the event's with the fragment's index (from 0).
  A field too large for a fragment by itself fails the stream (7182500).
- Resuming from a fragment's token needs the stage (ChangeStreamFatalError, 280, otherwise) and
  re-splits the event, continuing after that fragment; an event that no longer splits, or splits into
  fewer fragments, is ChangeStreamFatalError.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import bson

from foliodb.engine.catalog import CODEC
from foliodb.errors import CommandError, ErrorCode

STAGE = "$changeStreamSplitLargeEvent"
MAX_FRAGMENT_EVENT = 16 * 1024 * 1024 + 16 * 1024 - 8 * 1024


def take_stage(stages: list[Any]) -> bool:
    """Remove the split stage from a change stream's later stages; whether it was there."""
    names = [next(iter(stage), "") if isinstance(stage, Mapping) else "" for stage in stages]
    if STAGE not in names:
        return False
    at = names.index(STAGE)
    spec = stages[at][STAGE]
    if not isinstance(spec, Mapping) or spec:
        raise CommandError(7182800, f"{STAGE} spec should be an empty object")
    if at != len(stages) - 1:
        raise CommandError(7182802, f"{STAGE} must be the last stage in the pipeline")
    del stages[at]
    return True


def needs_stage(fragment: int | None, has_stage: bool) -> None:
    """A fragment's resume token needs the split stage in the resumed pipeline."""
    if fragment is not None and not has_stage:
        raise CommandError(
            ErrorCode.ChangeStreamFatalError,
            f"To resume from a split event, the $changeStream pipeline must include a {STAGE} stage",
        )


def size_of(event: Mapping[str, Any]) -> int:
    return len(bson.encode(event, codec_options=CODEC))


def split(event: Mapping[str, Any], tokens: list[dict[str, str]], skip: int) -> list[dict[str, Any]]:
    """The fragments of ``event`` after the first ``skip``; ``tokens[i]`` is fragment i's resume token
    (as many as there could be fragments: one per field)."""
    fields = sorted(((_element_size(k, v), k) for k, v in event.items() if k != "_id"), key=lambda f: f)
    if not fields:
        raise CommandError(7182502, "Cannot split an empty event or an event containing solely '_id' field")
    limit = MAX_FRAGMENT_EVENT - size_of(tokens[0])
    fragments: list[dict[str, Any]] = []
    i = 0
    while i < len(fields):
        fragment: dict[str, Any] = {
            "_id": tokens[len(fragments)],
            "splitEvent": {"fragment": len(fragments) + 1, "of": 0},
        }
        size = size_of(fragment)
        while True:  # at least one field per fragment
            field_size, name = fields[i]
            fragment[name] = event[name]
            size += field_size
            i += 1
            if i == len(fields) or size + fields[i][0] > limit:
                break
        if size > limit:
            raise CommandError(
                7182500,
                f"Splitting change event failed: fragment size {size} is greater than maximum allowed fragment "
                f"size {limit}",
            )
        fragments.append(fragment)
    for fragment in fragments:
        fragment["splitEvent"]["of"] = len(fragments)
    if skip and skip > len(fragments):
        raise CommandError(
            ErrorCode.ChangeStreamFatalError,
            "Attempted to resume from a split event, but the resumed stream produced a different split. Ensure "
            "that the pipeline used to resume is the same as the original",
        )
    return fragments[skip:]


def not_split(skip: int) -> None:
    """Resuming inside an event that is now small enough to go whole."""
    if skip:
        raise CommandError(
            ErrorCode.ChangeStreamFatalError,
            "Attempted to resume from a split event fragment, but the event in the resumed stream was not large "
            "enough to be split",
        )


def _element_size(name: str, value: Any) -> int:
    """The size of ``name: value`` as a BSON element (the document's 5 framing bytes left out)."""
    return len(bson.encode({name: value}, codec_options=CODEC)) - 5
