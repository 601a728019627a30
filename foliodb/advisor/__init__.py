"""The schema-design advisor: reads a database (a sample of each collection
and cheap exact statistics, its indexes, the profiler's record of its
workload) and says what to embed, reference, bucket, denormalize or index,
each finding with stable codes, its evidence, the change and its effect.

It needs only pymongo's API, so it reads a FolioDB database, ``foliodb
serve``, or a MongoDB deployment alike::

    from foliodb.advisor import advise
    for finding in advise(client.shop).findings:
        print(finding.severity, finding.collection, finding.problem, finding.recommendation)
"""

from foliodb.advisor.advise import DEFAULT_SAMPLE, advise
from foliodb.advisor.report import Change, Finding, Report
from foliodb.advisor.report_schema import REPORT_SCHEMA

__all__ = ["DEFAULT_SAMPLE", "REPORT_SCHEMA", "Change", "Finding", "Report", "advise"]
