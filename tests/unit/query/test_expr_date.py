"""Date expressions: parts, $dateToParts/$dateFromParts, $dateToString/
$dateFromString, $dateAdd/$dateSubtract/$dateDiff/$dateTrunc, time zones.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/#date-expression-operators
Expected instants in other zones come from Python's zoneinfo.
"""

from __future__ import annotations

import datetime
import zoneinfo

import bson
import pytest
from bson import Int64, ObjectId, Timestamp
from bson.datetime_ms import DatetimeMS
from hypothesis import given
from hypothesis import strategies as st

from foliodb.errors import CommandError
from foliodb.query.expr import Scope, compile_expression, root_variables

BASE = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/"
D = datetime.datetime
NY = zoneinfo.ZoneInfo("America/New_York")
DATE = D(2014, 1, 1, 8, 15, 39, 736000)  # the manual's example date
DOC = {"date": DATE, "n": None, "s": "x", "tz": "America/New_York"}


def url(name):
    return BASE + name + "/"


def utc(local):
    """A naive UTC datetime for a wall-clock time in New York."""
    return local.replace(tzinfo=NY).astimezone(datetime.UTC).replace(tzinfo=None)


def evaluate(spec, doc=None):
    doc = DOC if doc is None else doc
    return compile_expression(spec, Scope())(doc, root_variables(doc, {}, D(2024, 1, 1)))


def same(got, want):
    assert bson.encode({"v": got}) == bson.encode({"v": want}), (got, want)


@pytest.mark.parametrize(
    ("source", "spec", "want"),
    [
        (url("year"), {"$year": "$date"}, 2014),
        (url("month"), {"$month": "$date"}, 1),
        (url("dayOfMonth"), {"$dayOfMonth": "$date"}, 1),
        (url("hour"), {"$hour": "$date"}, 8),
        (url("minute"), {"$minute": "$date"}, 15),
        (url("second"), {"$second": "$date"}, 39),
        (url("millisecond"), {"$millisecond": "$date"}, 736),
        (url("dayOfYear"), {"$dayOfYear": "$date"}, 1),
        (url("dayOfWeek"), {"$dayOfWeek": "$date"}, 4),  # Wednesday; Sunday is 1
        (url("week"), {"$week": "$date"}, 0),  # before the year's first Sunday
        (url("week"), {"$week": D(2017, 1, 1)}, 1),  # 2017-01-01 was a Sunday
        (url("isoDayOfWeek"), {"$isoDayOfWeek": "$date"}, 3),
        (url("isoWeek"), {"$isoWeek": D(2016, 1, 1)}, 53),
        (url("isoWeekYear"), {"$isoWeekYear": D(2016, 1, 1)}, Int64(2015)),
        (url("hour"), {"$hour": {"date": "$date", "timezone": "America/New_York"}}, 3),
        (url("hour"), {"$hour": {"date": "$date", "timezone": "$tz"}}, 3),
        (url("hour"), {"$hour": {"date": "$date", "timezone": "+04:30"}}, 12),
        (url("minute"), {"$minute": {"date": "$date", "timezone": "-0130"}}, 45),
        (url("hour"), {"$hour": {"date": "$date", "timezone": "+03"}}, 11),
        (url("hour"), {"$hour": {"date": "$date", "timezone": "$n"}}, None),
        (url("hour"), {"$hour": ["$date"]}, 8),
        (url("year"), {"$year": {"$add": ["$date", 365 * 86400000]}}, 2015),  # an expression, not {date: ...}
        (url("year"), {"$year": "$n"}, None),
        (url("year"), {"$year": "$missing"}, None),
        (url("year"), {"$year": Timestamp(1262304000, 1)}, 2010),
        (url("year"), {"$year": ObjectId("5a0000000000000000000000")}, 2017),
        (url("year"), {"$year": DatetimeMS(-62135596800001)}, 0),  # one millisecond before year 1
        (url("year"), {"$year": DatetimeMS(253402300800000)}, 10000),
        (
            url("dateToParts"),
            {"$dateToParts": {"date": D(2017, 1, 1, 1, 29, 9, 123000), "timezone": "America/New_York"}},
            {"year": 2016, "month": 12, "day": 31, "hour": 20, "minute": 29, "second": 9, "millisecond": 123},
        ),
        (
            url("dateToParts"),
            {"$dateToParts": {"date": D(2017, 1, 1, 1, 29, 9, 123000), "iso8601": True}},
            {
                "isoWeekYear": 2016,
                "isoWeek": 52,
                "isoDayOfWeek": 7,
                "hour": 1,
                "minute": 29,
                "second": 9,
                "millisecond": 123,
            },
        ),
        (url("dateToParts"), {"$dateToParts": {"date": "$n"}}, None),
        (url("dateToParts"), {"$dateToParts": {"date": "$date", "iso8601": "$n"}}, None),
        (url("dateFromParts"), {"$dateFromParts": {"year": 2017, "month": 2, "day": 8, "hour": 12}}, D(2017, 2, 8, 12)),
        (
            url("dateFromParts"),
            {"$dateFromParts": {"year": 2017, "month": 2, "day": 8, "hour": 12, "timezone": "America/New_York"}},
            utc(D(2017, 2, 8, 12)),
        ),
        (
            url("dateFromParts"),
            {"$dateFromParts": {"isoWeekYear": 2017, "isoWeek": 6, "isoDayOfWeek": 3, "hour": 12}},
            D(2017, 2, 8, 12),
        ),
        (
            url("dateFromParts"),
            {"$dateFromParts": {"year": 2017, "month": 14, "day": 1, "hour": 12}},
            D(2018, 2, 1, 12),
        ),
        (url("dateFromParts"), {"$dateFromParts": {"year": 2017, "month": 0, "day": 1}}, D(2016, 12, 1)),
        (url("dateFromParts"), {"$dateFromParts": {"year": 2017, "month": 3, "day": 0}}, D(2017, 2, 28)),
        (
            url("dateFromParts"),
            {"$dateFromParts": {"year": 2017, "hour": -1, "millisecond": 1500}},
            D(2016, 12, 31, 23, 0, 1, 500000),
        ),
        (url("dateFromParts"), {"$dateFromParts": {"year": 2017.0, "month": Int64(2)}}, D(2017, 2, 1)),
        (url("dateFromParts"), {"$dateFromParts": {"year": 2017, "month": "$n"}}, None),
        (url("dateFromParts"), {"$dateFromParts": {"year": 2017, "timezone": "$missing"}}, None),
        (url("dateToString"), {"$dateToString": {"format": "%Y-%m-%d", "date": "$date"}}, "2014-01-01"),
        (
            url("dateToString"),
            {"$dateToString": {"format": "%H:%M:%S:%L%z", "date": "$date", "timezone": "America/New_York"}},
            "03:15:39:736-0500",
        ),
        (
            url("dateToString"),
            {"$dateToString": {"format": "%Z", "date": "$date", "timezone": "America/New_York"}},
            "-300",
        ),
        (
            url("dateToString"),
            {"$dateToString": {"format": "%H:%M:%S:%L%z", "date": "$date", "timezone": "+04:30"}},
            "12:45:39:736+0430",
        ),
        (url("dateToString"), {"$dateToString": {"format": "%Z", "date": "$date", "timezone": "+04:30"}}, "270"),
        (
            url("dateToString"),
            {"$dateToString": {"format": "%b %B %j %w %u %U %V %G %%", "date": "$date"}},
            "Jan January 001 4 3 00 01 2014 %",
        ),
        (url("dateToString"), {"$dateToString": {"date": "$date"}}, "2014-01-01T08:15:39.736Z"),
        (
            url("dateToString"),
            {"$dateToString": {"date": "$date", "timezone": "America/New_York"}},
            "2014-01-01T03:15:39.736",
        ),
        (url("dateToString"), {"$dateToString": {"date": "$date", "timezone": "UTC"}}, "2014-01-01T08:15:39.736Z"),
        (url("dateToString"), {"$dateToString": {"date": "$n", "onNull": "none"}}, "none"),
        (url("dateToString"), {"$dateToString": {"date": "$missing"}}, None),
        (url("dateToString"), {"$dateToString": {"date": "$date", "format": "$n"}}, None),
        (url("dateToString"), {"$dateToString": {"date": Timestamp(0, 1), "format": "%Y"}}, "1970"),
        (
            url("dateFromString"),
            {"$dateFromString": {"dateString": "2017-02-08T12:10:40.787"}},
            D(2017, 2, 8, 12, 10, 40, 787000),
        ),
        (
            url("dateFromString"),
            {"$dateFromString": {"dateString": "2017-02-08T12:10:40.787", "timezone": "America/New_York"}},
            utc(D(2017, 2, 8, 12, 10, 40, 787000)),
        ),
        (url("dateFromString"), {"$dateFromString": {"dateString": "2017-02-08"}}, D(2017, 2, 8)),
        (url("dateFromString"), {"$dateFromString": {"dateString": "2017-02-08T12:10:40Z"}}, D(2017, 2, 8, 12, 10, 40)),
        (
            url("dateFromString"),
            {"$dateFromString": {"dateString": "2017-02-08 12:10:40.787+05:30"}},
            D(2017, 2, 8, 6, 40, 40, 787000),
        ),
        (
            url("dateFromString"),
            {"$dateFromString": {"dateString": "2017-02-08T12:10:40Z", "timezone": "+00:00"}},
            D(2017, 2, 8, 12, 10, 40),
        ),  # a zero offset zone accepts a zone in the string
        (url("dateFromString"), {"$dateFromString": {"dateString": "Feb 8, 2017 07:00"}}, D(2017, 2, 8, 7)),
        (url("dateFromString"), {"$dateFromString": {"dateString": "8 February 2017"}}, D(2017, 2, 8)),
        (
            url("dateFromString"),
            {"$dateFromString": {"dateString": "06-15-2018", "format": "%m-%d-%Y"}},
            D(2018, 6, 15),
        ),
        (
            url("dateFromString"),
            {"$dateFromString": {"dateString": "15-06-2018", "format": "%d-%m-%Y"}},
            D(2018, 6, 15),
        ),
        (
            url("dateFromString"),
            {"$dateFromString": {"dateString": "2018 jun 15 10:00 +0100", "format": "%Y %b %d %H:%M %z"}},
            D(2018, 6, 15, 9),
        ),
        (url("dateFromString"), {"$dateFromString": {"dateString": "2018-045", "format": "%Y-%j"}}, D(2018, 2, 14)),
        (
            url("dateFromString"),
            {"$dateFromString": {"dateString": "2017-W06-3", "format": "%G-W%V-%u"}},
            D(2017, 2, 8),
        ),
        (url("dateFromString"), {"$dateFromString": {"dateString": "$n", "onNull": "none"}}, "none"),
        (url("dateFromString"), {"$dateFromString": {"dateString": "$missing"}}, None),
        (url("dateFromString"), {"$dateFromString": {"dateString": "bad", "onError": "error"}}, "error"),
        (url("dateFromString"), {"$dateFromString": {"dateString": 5, "onError": "error"}}, "error"),
        (url("dateFromString"), {"$dateFromString": {"dateString": "2017-02-08", "timezone": "$n"}}, None),
    ],
)
def test_values(source, spec, want):
    same(evaluate(spec), want)


@pytest.mark.parametrize(
    ("source", "spec", "code"),
    [
        (url("year"), {"$year": {}}, 40539),
        (url("year"), {"$year": {"date": "$date", "zone": 1}}, 40535),
        (url("year"), {"$year": [1, 2]}, 40536),
        (url("hour"), {"$hour": {"date": "$date", "timezone": "Mars/Olympus"}}, 40485),  # a constant zone fails early
        (url("hour"), {"$hour": {"date": "$date", "timezone": 5}}, 40517),
        (url("dateToParts"), {"$dateToParts": 1}, 40524),
        (url("dateToParts"), {"$dateToParts": {"date": 1, "x": 1}}, 40520),
        (url("dateToParts"), {"$dateToParts": {"timezone": "UTC"}}, 40522),
        (url("dateFromParts"), {"$dateFromParts": 1}, 40519),
        (url("dateFromParts"), {"$dateFromParts": {"year": 1, "x": 1}}, 40518),
        (url("dateFromParts"), {"$dateFromParts": {"month": 1}}, 40516),
        (url("dateFromParts"), {"$dateFromParts": {"year": 2017, "isoWeek": 1}}, 40489),
        (url("dateFromParts"), {"$dateFromParts": {"isoWeekYear": 2017, "day": 1}}, 40525),
        (url("dateToString"), {"$dateToString": 1}, 18629),
        (url("dateToString"), {"$dateToString": {"date": 1, "x": 1}}, 18534),
        (url("dateToString"), {"$dateToString": {"format": "%Y"}}, 18628),
        (url("dateToString"), {"$dateToString": {"date": "$date", "format": "%Y%"}}, 18535),
        (url("dateToString"), {"$dateToString": {"date": "$date", "format": "%x"}}, 18536),
        (url("dateToString"), {"$dateToString": {"date": "$date", "format": 5}}, 18533),
        (url("dateFromString"), {"$dateFromString": 1}, 40540),
        (url("dateFromString"), {"$dateFromString": {"dateString": "x", "y": 1}}, 40541),
        (url("dateFromString"), {"$dateFromString": {"format": "%Y"}}, 40542),
        (url("dateFromString"), {"$dateFromString": {"dateString": "x", "format": "%w"}}, 18536),
        (url("dateFromString"), {"$dateFromString": {"dateString": "x", "format": 1}}, 40684),
    ],
)
def test_parse_errors(source, spec, code):
    with pytest.raises(CommandError) as raised:
        compile_expression(spec)
    assert raised.value.code == code


@pytest.mark.parametrize(
    ("source", "spec", "code", "message"),
    [
        (url("year"), {"$year": "$s"}, 16006, "can't convert from BSON type string to Date"),
        (url("hour"), {"$hour": {"date": "$date", "timezone": "$s"}}, 40485, 'unrecognized time zone identifier: "x"'),
        (
            url("dateToParts"),
            {"$dateToParts": {"date": "$date", "iso8601": 1}},
            40521,
            "iso8601 must evaluate to a bool, found int",
        ),
        (
            url("dateFromParts"),
            {"$dateFromParts": {"year": "$s"}},
            40515,
            "'year' must evaluate to an integer, found string with value \"x\"",
        ),
        (
            url("dateFromParts"),
            {"$dateFromParts": {"year": 0}},
            40523,
            "'year' must evaluate to an integer in the range 1 to 9999, found 0",
        ),
        (
            url("dateFromParts"),
            {"$dateFromParts": {"isoWeekYear": 10000}},
            31095,
            "'isoWeekYear' must evaluate to an integer in the range 1 to 9999, found 10000",
        ),
        (
            url("dateFromParts"),
            {"$dateFromParts": {"year": 2000, "day": 40000}},
            31034,
            "'day' must evaluate to a value in the range [-32768, 32767]; value 40000 is not in range",
        ),
        (url("dateFromParts"), {"$dateFromParts": {"year": 2000, "second": 1.5}}, 40515, None),
        (
            # mongod's createFromDateParts casts the milliseconds to microseconds, checked: 2**54 ms
            # (integral, so no 40515) times 1000 passes 2**63.
            url("dateFromParts"),
            {"$dateFromParts": {"year": 1970, "millisecond": 18014398509481984.0}},
            159,
            "Overflow casting from a lower-precision duration to a higher-precision duration",
        ),
        (
            url("dateFromParts"),
            {"$dateFromParts": {"year": 1970, "millisecond": Int64(-(2**62))}},
            159,
            "Overflow casting from a lower-precision duration to a higher-precision duration",
        ),
        (url("dateToString"), {"$dateToString": {"date": "$s"}}, 16006, None),
        (
            url("dateToString"),
            {"$dateToString": {"date": DatetimeMS(253402300800000)}},
            18537,
            "Could not convert date to string: date component was outside the supported range of 0-9999: 10000",
        ),
        (url("dateFromString"), {"$dateFromString": {"dateString": "bad"}}, 241, None),
        (
            url("dateFromString"),
            {"$dateFromString": {"dateString": 5}},
            241,
            "$dateFromString requires that 'dateString' be a string, found: int with value 5",
        ),
        (
            url("dateFromString"),
            {"$dateFromString": {"dateString": "12:00"}},
            241,
            'an incomplete date/time string has been found, with elements missing: "12:00"',
        ),
        (url("dateFromString"), {"$dateFromString": {"dateString": "2017-02-30"}}, 241, None),
        (url("dateFromString"), {"$dateFromString": {"dateString": "2017-02-08 Europe/London"}}, 241, None),
        (
            url("dateFromString"),
            {"$dateFromString": {"dateString": "2017-02-08T10:00+01:00", "timezone": "Europe/Paris"}},
            241,
            "you cannot pass in a date/time string with GMT offset together with a timezone argument",
        ),
        (
            url("dateFromString"),
            {"$dateFromString": {"dateString": "2017-02-08T10:00Z", "timezone": "Europe/Paris"}},
            241,
            "you cannot pass in a date/time string with time zone information ('Z') together with a timezone argument",
        ),
        (url("dateFromString"), {"$dateFromString": {"dateString": "2017-02-08x", "format": "%Y-%m-%d"}}, 241, None),
        (url("dateFromString"), {"$dateFromString": {"dateString": "2017-02", "format": "%Y-%m-%d"}}, 241, None),
    ],
)
def test_runtime_errors(source, spec, code, message):
    with pytest.raises(CommandError) as raised:
        evaluate(spec)
    assert raised.value.code == code
    if message is not None:
        assert raised.value.errmsg == message


@pytest.mark.parametrize(
    ("source", "spec", "want"),
    [
        (
            url("dateAdd"),
            {"$dateAdd": {"startDate": D(2020, 10, 31, 12), "unit": "month", "amount": 1}},
            D(2020, 11, 30, 12),
        ),
        (url("dateAdd"), {"$dateAdd": {"startDate": D(2020, 2, 29), "unit": "year", "amount": 1}}, D(2021, 2, 28)),
        (url("dateAdd"), {"$dateAdd": {"startDate": D(2020, 1, 31), "unit": "quarter", "amount": 1}}, D(2020, 4, 30)),
        (url("dateAdd"), {"$dateAdd": {"startDate": D(2020, 1, 1), "unit": "week", "amount": 2}}, D(2020, 1, 15)),
        (
            url("dateAdd"),
            {"$dateAdd": {"startDate": D(2020, 1, 1), "unit": "millisecond", "amount": Int64(1500)}},
            D(2020, 1, 1, 0, 0, 1, 500000),
        ),
        (
            url("dateAdd"),
            {"$dateAdd": {"startDate": D(2021, 3, 13, 17), "unit": "day", "amount": 1, "timezone": "America/New_York"}},
            utc(D(2021, 3, 14, 12)),
        ),  # across the change to daylight time the wall clock stays at noon
        (
            url("dateAdd"),
            {
                "$dateAdd": {
                    "startDate": D(2021, 3, 13, 17),
                    "unit": "hour",
                    "amount": 24,
                    "timezone": "America/New_York",
                }
            },
            D(2021, 3, 14, 17),
        ),  # hours move the instant
        (url("dateAdd"), {"$dateAdd": {"startDate": "$n", "unit": "day", "amount": 1}}, None),
        (url("dateAdd"), {"$dateAdd": {"startDate": "$date", "unit": "$missing", "amount": 1}}, None),
        (url("dateAdd"), {"$dateAdd": {"startDate": "$date", "unit": "day", "amount": 1, "timezone": "$n"}}, None),
        (
            url("dateAdd"),
            {"$dateAdd": {"startDate": Timestamp(0, 1), "unit": "second", "amount": 1}},
            D(1970, 1, 1, 0, 0, 1),
        ),
        (
            url("dateSubtract"),
            {"$dateSubtract": {"startDate": D(2021, 3, 31), "unit": "month", "amount": 1}},
            D(2021, 2, 28),
        ),
        (
            url("dateSubtract"),
            {"$dateSubtract": {"startDate": D(2021, 1, 1), "unit": "day", "amount": -1}},
            D(2021, 1, 2),
        ),
        (
            url("dateDiff"),
            {"$dateDiff": {"startDate": D(2020, 12, 31, 23), "endDate": D(2021, 1, 1, 1), "unit": "year"}},
            Int64(1),
        ),
        (
            url("dateDiff"),
            {"$dateDiff": {"startDate": D(2021, 1, 1), "endDate": D(2020, 11, 30), "unit": "quarter"}},
            Int64(-1),
        ),
        (
            url("dateDiff"),
            {"$dateDiff": {"startDate": D(2021, 1, 31), "endDate": D(2021, 2, 1), "unit": "month"}},
            Int64(1),
        ),
        (
            url("dateDiff"),
            {
                "$dateDiff": {
                    "startDate": D(2021, 1, 1),
                    "endDate": D(2021, 1, 4),
                    "unit": "week",
                    "startOfWeek": "monday",
                }
            },
            Int64(1),
        ),
        (
            url("dateDiff"),
            {"$dateDiff": {"startDate": D(2021, 1, 1), "endDate": D(2021, 1, 4), "unit": "week", "startOfWeek": "TUE"}},
            Int64(0),
        ),
        (
            url("dateDiff"),
            {"$dateDiff": {"startDate": D(2021, 1, 1), "endDate": D(2021, 1, 4), "unit": "week"}},
            Int64(1),
        ),
        (
            url("dateDiff"),
            {"$dateDiff": {"startDate": D(2021, 1, 1, 23, 59), "endDate": D(2021, 1, 2, 0, 1), "unit": "day"}},
            Int64(1),
        ),
        (
            url("dateDiff"),
            {
                "$dateDiff": {
                    "startDate": D(2021, 1, 2, 4),
                    "endDate": D(2021, 1, 2, 6),
                    "unit": "day",
                    "timezone": "America/New_York",
                }
            },
            Int64(1),
        ),  # 23:00 to 01:00 local
        (
            url("dateDiff"),
            {
                "$dateDiff": {
                    "startDate": D(2021, 3, 14, 6),
                    "endDate": D(2021, 3, 14, 8),
                    "unit": "hour",
                    "timezone": "America/New_York",
                }
            },
            Int64(2),
        ),  # elapsed hours across the change
        (
            url("dateDiff"),
            {"$dateDiff": {"startDate": D(2021, 1, 1, 0, 0, 59), "endDate": D(2021, 1, 1, 0, 1), "unit": "minute"}},
            Int64(1),
        ),
        (
            url("dateDiff"),
            {
                "$dateDiff": {
                    "startDate": D(2021, 1, 1, 0, 0, 0, 999000),
                    "endDate": D(2021, 1, 1, 0, 0, 1),
                    "unit": "second",
                }
            },
            Int64(1),
        ),
        (
            url("dateDiff"),
            {"$dateDiff": {"startDate": D(2021, 1, 1), "endDate": D(2021, 1, 1, 0, 0, 1), "unit": "millisecond"}},
            Int64(1000),
        ),
        (url("dateDiff"), {"$dateDiff": {"startDate": "$n", "endDate": "$date", "unit": "day"}}, None),
        (
            url("dateDiff"),
            {"$dateDiff": {"startDate": "$date", "endDate": "$date", "unit": "week", "startOfWeek": "$n"}},
            None,
        ),
        (
            url("dateDiff"),
            {"$dateDiff": {"startDate": "$date", "endDate": "$date", "unit": "day", "startOfWeek": "$n"}},
            Int64(0),
        ),
        (url("dateTrunc"), {"$dateTrunc": {"date": D(2021, 3, 20, 11, 30, 5), "unit": "week"}}, D(2021, 3, 14)),
        (
            url("dateTrunc"),
            {"$dateTrunc": {"date": D(2021, 3, 20, 11, 30, 5), "unit": "week", "startOfWeek": "monday"}},
            D(2021, 3, 15),
        ),
        (
            url("dateTrunc"),
            {"$dateTrunc": {"date": D(2021, 3, 20, 11, 30, 5), "unit": "month", "binSize": 3}},
            D(2021, 1, 1),
        ),
        (url("dateTrunc"), {"$dateTrunc": {"date": D(2021, 3, 20, 11, 30, 5), "unit": "year"}}, D(2021, 1, 1)),
        (
            url("dateTrunc"),
            {"$dateTrunc": {"date": D(2021, 3, 20, 11, 30, 5), "unit": "quarter", "binSize": 2}},
            D(2021, 1, 1),
        ),
        (
            url("dateTrunc"),
            {"$dateTrunc": {"date": D(2021, 3, 20, 11, 30, 5), "unit": "day", "binSize": 7}},
            D(2021, 3, 20),
        ),  # 7749 days after 2000-01-01, a multiple of 7
        (url("dateTrunc"), {"$dateTrunc": {"date": D(2021, 3, 19), "unit": "day", "binSize": 7}}, D(2021, 3, 13)),
        (
            url("dateTrunc"),
            {"$dateTrunc": {"date": D(2021, 3, 20, 11, 30, 5), "unit": "hour", "binSize": 6, "timezone": "+05:30"}},
            D(2021, 3, 20, 6, 30),
        ),
        (
            url("dateTrunc"),
            {"$dateTrunc": {"date": D(2021, 3, 20, 11, 30, 5, 500000), "unit": "second"}},
            D(2021, 3, 20, 11, 30, 5),
        ),
        (
            url("dateTrunc"),
            {"$dateTrunc": {"date": D(2021, 3, 20, 11, 30), "unit": "day", "timezone": "America/New_York"}},
            utc(D(2021, 3, 20)),
        ),
        (
            url("dateTrunc"),
            {"$dateTrunc": {"date": D(1999, 12, 31, 23), "unit": "minute", "binSize": 7}},
            D(1999, 12, 31, 22, 57),
        ),  # bins count back from 2000-01-01: 63 minutes = 9 bins
        (url("dateTrunc"), {"$dateTrunc": {"date": "$n", "unit": "day"}}, None),
        (url("dateTrunc"), {"$dateTrunc": {"date": "$date", "unit": "day", "binSize": "$n"}}, None),
    ],
)
def test_arithmetic(source, spec, want):
    same(evaluate(spec), want)


@pytest.mark.parametrize(
    ("source", "spec", "code"),
    [
        (url("dateAdd"), {"$dateAdd": 1}, 5166400),
        (url("dateAdd"), {"$dateAdd": {"startDate": 1, "unit": "day", "amount": 1, "x": 1}}, 5166401),
        (url("dateSubtract"), {"$dateSubtract": {"startDate": 1, "unit": "day"}}, 5166402),
        (url("dateDiff"), {"$dateDiff": 1}, 5166301),
        (url("dateDiff"), {"$dateDiff": {"startDate": 1, "endDate": 1, "unit": "day", "x": 1}}, 5166302),
        (url("dateDiff"), {"$dateDiff": {"endDate": 1, "unit": "day"}}, 5166303),
        (url("dateDiff"), {"$dateDiff": {"startDate": 1, "unit": "day"}}, 5166304),
        (url("dateDiff"), {"$dateDiff": {"startDate": 1, "endDate": 1}}, 5166305),
        (url("dateTrunc"), {"$dateTrunc": 1}, 5439007),
        (url("dateTrunc"), {"$dateTrunc": {"date": 1, "unit": "day", "x": 1}}, 5439008),
        (url("dateTrunc"), {"$dateTrunc": {"unit": "day"}}, 5439009),
        (url("dateTrunc"), {"$dateTrunc": {"date": 1}}, 5439010),
    ],
)
def test_arithmetic_parse_errors(source, spec, code):
    with pytest.raises(CommandError) as raised:
        compile_expression(spec)
    assert raised.value.code == code


@pytest.mark.parametrize(
    ("source", "spec", "code"),
    [
        (url("dateAdd"), {"$dateAdd": {"startDate": "$s", "unit": "day", "amount": 1}}, 5166403),
        (url("dateAdd"), {"$dateAdd": {"startDate": "$date", "unit": 1, "amount": 1}}, 5439013),
        (url("dateAdd"), {"$dateAdd": {"startDate": "$date", "unit": "days", "amount": 1}}, 9),
        (url("dateAdd"), {"$dateAdd": {"startDate": "$date", "unit": "day", "amount": 1.5}}, 5166405),
        (url("dateAdd"), {"$dateAdd": {"startDate": "$date", "unit": "year", "amount": Int64(10**15)}}, 5976500),
        (
            url("dateSubtract"),
            {"$dateSubtract": {"startDate": "$date", "unit": "millisecond", "amount": Int64(-(2**63))}},
            6045000,
        ),
        (url("dateDiff"), {"$dateDiff": {"startDate": "$s", "endDate": "$date", "unit": "day"}}, 5166307),
        (
            url("dateDiff"),
            {"$dateDiff": {"startDate": "$date", "endDate": "$date", "unit": "week", "startOfWeek": 1}},
            5439015,
        ),
        (
            url("dateDiff"),
            {"$dateDiff": {"startDate": "$date", "endDate": "$date", "unit": "week", "startOfWeek": "x"}},
            5439016,
        ),
        (
            url("dateDiff"),
            {"$dateDiff": {"startDate": "$date", "endDate": "$date", "unit": "day", "timezone": "$s"}},
            40485,
        ),
        (url("dateTrunc"), {"$dateTrunc": {"date": "$s", "unit": "day"}}, 5439012),
        (url("dateTrunc"), {"$dateTrunc": {"date": "$date", "unit": "day", "binSize": 1.5}}, 5439017),
        (url("dateTrunc"), {"$dateTrunc": {"date": "$date", "unit": "day", "binSize": 0}}, 5439018),
        (url("dateTrunc"), {"$dateTrunc": {"date": "$date", "unit": "day", "binSize": Int64(10**12)}}, 5439006),
    ],
)
def test_arithmetic_runtime_errors(source, spec, code):
    with pytest.raises(CommandError) as raised:
        evaluate(spec)
    assert raised.value.code == code


moments = st.datetimes(min_value=D(1900, 1, 1), max_value=D(2100, 1, 1)).map(
    lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000)
)


@given(moments)
def test_parts_agree_with_python(moment):
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/dateToParts/
    local = moment.replace(tzinfo=datetime.UTC).astimezone(NY)
    iso = local.isocalendar()
    got = evaluate({"$dateToParts": {"date": moment, "timezone": "America/New_York"}})
    assert got == {
        "year": local.year,
        "month": local.month,
        "day": local.day,
        "hour": local.hour,
        "minute": local.minute,
        "second": local.second,
        "millisecond": local.microsecond // 1000,
    }
    assert evaluate({"$isoWeek": {"date": moment, "timezone": "America/New_York"}}) == iso.week
    assert evaluate({"$isoWeekYear": {"date": moment, "timezone": "America/New_York"}}) == iso.year
    assert evaluate({"$dayOfYear": moment}) == moment.timetuple().tm_yday
    assert evaluate({"$week": moment}) == int(moment.strftime("%U"))


@given(moments)
def test_string_round_trip(moment):
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/dateFromString/
    text = evaluate({"$dateToString": {"date": moment, "timezone": "America/New_York"}})
    back = evaluate({"$dateFromString": {"dateString": text, "timezone": "America/New_York"}})
    local = moment.replace(tzinfo=datetime.UTC).astimezone(NY)
    if local.fold == 0 and local.dst() == (local - datetime.timedelta(hours=2)).dst():
        assert back == moment  # unambiguous wall-clock times read back to the same instant
