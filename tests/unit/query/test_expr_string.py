"""String and regular-expression expressions.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/#string-expression-operators
"""

from __future__ import annotations

import datetime

import bson
import pytest
from bson import Code, Decimal128, Int64, Regex, Timestamp

from foliodb.errors import CommandError
from foliodb.query.expr import Scope, compile_expression, root_variables

BASE = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/"
DOC = {"s": "cafétéria", "n": None, "num": 5, "date": datetime.datetime(2014, 1, 1, 8, 15, 39, 736000)}


def url(name):
    return BASE + name + "/"


def evaluate(spec, doc=None):
    doc = DOC if doc is None else doc
    return compile_expression(spec, Scope())(doc, root_variables(doc, {}, datetime.datetime(2024, 1, 1)))


def same(got, want):
    assert bson.encode({"v": got}) == bson.encode({"v": want}), (got, want)


@pytest.mark.parametrize(
    ("source", "spec", "want"),
    [
        (url("concat"), {"$concat": ["a", " - ", "b"]}, "a - b"),
        (url("concat"), {"$concat": []}, ""),
        (url("concat"), {"$concat": ["a", "$missing"]}, None),
        (url("strcasecmp"), {"$strcasecmp": ["13Q1", "13q1"]}, 0),
        (url("strcasecmp"), {"$strcasecmp": ["a", "B"]}, -1),
        (url("strcasecmp"), {"$strcasecmp": ["é", "É"]}, 1),  # only ASCII letters fold
        (url("strcasecmp"), {"$strcasecmp": ["$n", ""]}, 0),  # null reads as ""
        (url("strcasecmp"), {"$strcasecmp": [1.5, "1.5"]}, 0),
        (url("toLower"), {"$toLower": "ABC123xyz"}, "abc123xyz"),
        (url("toLower"), {"$toLower": "ÉCOLE"}, "École"),
        (url("toLower"), {"$toLower": "$n"}, ""),
        (url("toUpper"), {"$toUpper": "$s"}, "CAFéTéRIA"),
        (url("toUpper"), {"$toUpper": Int64(12)}, "12"),
        (url("toUpper"), {"$toUpper": Decimal128("1.50")}, "1.50"),
        (url("toUpper"), {"$toUpper": "$date"}, "2014-01-01T08:15:39.736Z"),
        (url("toUpper"), {"$toUpper": Timestamp(86401, 7)}, "JAN  2 00:00:01:7"),  # C's ctime() layout
        (url("toLower"), {"$toLower": Code("F()")}, "f()"),
        (url("substrBytes"), {"$substrBytes": ["abcde", 1, 2]}, "bc"),
        (url("substrBytes"), {"$substrBytes": ["abcde", 1, -1]}, "bcde"),
        (url("substrBytes"), {"$substrBytes": ["abcde", 9, 2]}, ""),
        (url("substrBytes"), {"$substrBytes": ["$s", 3, 2]}, "é"),  # é is two bytes
        (url("substrBytes"), {"$substrBytes": ["abc", 0.9, 1.9]}, "a"),  # numbers truncate
        (url("substrBytes"), {"$substrBytes": ["$n", 0, 1]}, ""),
        (url("substr"), {"$substr": ["abcde", 0, 3]}, "abc"),
        (url("substrCP"), {"$substrCP": ["$s", 3, 3]}, "été"),
        (url("substrCP"), {"$substrCP": ["abc", 5, 1]}, ""),
        (url("substrCP"), {"$substrCP": [123, 0, 2]}, "12"),
        (url("strLenBytes"), {"$strLenBytes": "$s"}, 11),
        (url("strLenBytes"), {"$strLenBytes": "\U0001f600"}, 4),
        (url("strLenCP"), {"$strLenCP": "$s"}, 9),
        (url("strLenCP"), {"$strLenCP": ""}, 0),
        (url("indexOfBytes"), {"$indexOfBytes": ["cafeteria", "e"]}, 3),
        (url("indexOfBytes"), {"$indexOfBytes": ["$s", "t"]}, 5),  # bytes, after the two-byte é
        (url("indexOfBytes"), {"$indexOfBytes": ["cafeteria", "e", 5]}, 5),
        (url("indexOfBytes"), {"$indexOfBytes": ["cafeteria", "e", 6]}, -1),
        (url("indexOfBytes"), {"$indexOfBytes": ["cafeteria", "ria", 0, 8]}, -1),  # must end before 8
        (url("indexOfBytes"), {"$indexOfBytes": ["abc", "", 3]}, 3),
        (url("indexOfBytes"), {"$indexOfBytes": ["abc", "b", 2, 1]}, -1),
        (url("indexOfBytes"), {"$indexOfBytes": ["$n", "b"]}, None),
        (url("indexOfCP"), {"$indexOfCP": ["$s", "t"]}, 4),
        (url("indexOfCP"), {"$indexOfCP": ["cafeteria", "ria", 0, 7]}, 6),  # may run past the end index
        (url("indexOfCP"), {"$indexOfCP": ["", ""]}, 0),
        (url("indexOfCP"), {"$indexOfCP": ["abc", "", 3]}, -1),
        (url("indexOfCP"), {"$indexOfCP": ["$missing", "x"]}, None),
        (url("trim"), {"$trim": {"input": " \n good  bye \t "}}, "good  bye"),
        (url("trim"), {"$trim": {"input": "\u2003\u00a0x\x00"}}, "x"),
        (url("trim"), {"$trim": {"input": "ggood byeg", "chars": "g"}}, "ood bye"),
        (url("trim"), {"$trim": {"input": "xyzzyabcyx", "chars": "xyz"}}, "abc"),
        (url("trim"), {"$trim": {"input": "$n"}}, None),
        (url("trim"), {"$trim": {"input": "x", "chars": "$missing"}}, None),
        (url("ltrim"), {"$ltrim": {"input": "  x  "}}, "x  "),
        (url("rtrim"), {"$rtrim": {"input": "  x  "}}, "  x"),
        (url("rtrim"), {"$rtrim": {"input": "éaé", "chars": "é"}}, "éa"),
        (url("split"), {"$split": ["June-15-2013", "-"]}, ["June", "15", "2013"]),
        (url("split"), {"$split": ["astronomical", "astro"]}, ["", "nomical"]),
        (url("split"), {"$split": ["pea", "pea"]}, ["", ""]),
        (url("split"), {"$split": ["", ","]}, [""]),
        (url("split"), {"$split": ["$n", "-"]}, None),
        (
            url("replaceOne"),
            {"$replaceOne": {"input": "blue paint", "find": "blue", "replacement": "red"}},
            "red paint",
        ),
        (url("replaceOne"), {"$replaceOne": {"input": "a a", "find": "a", "replacement": "b"}}, "b a"),
        (url("replaceOne"), {"$replaceOne": {"input": "abc", "find": "", "replacement": "-"}}, "-abc"),
        (url("replaceOne"), {"$replaceOne": {"input": "abc", "find": "$n", "replacement": "-"}}, None),
        (url("replaceAll"), {"$replaceAll": {"input": "a a a", "find": "a", "replacement": "bb"}}, "bb bb bb"),
        (url("replaceAll"), {"$replaceAll": {"input": "aaa", "find": "aa", "replacement": "b"}}, "ba"),
        (url("replaceAll"), {"$replaceAll": {"input": "ab", "find": "", "replacement": "-"}}, "-a-b-"),
        (url("replaceAll"), {"$replaceAll": {"input": "$missing", "find": "a", "replacement": "b"}}, None),
    ],
)
def test_values(source, spec, want):
    same(evaluate(spec), want)


@pytest.mark.parametrize(
    ("source", "spec", "code", "message"),
    [
        (url("concat"), {"$concat": ["a", 1]}, 16702, "$concat only supports strings, not int"),
        (url("toLower"), {"$toLower": [[1]]}, 16007, "can't convert from BSON type array to String"),
        (
            url("toLower"),
            {"$toLower": Code("f", {"a": 1})},
            16007,
            "can't convert from BSON type javascriptWithScope to String",
        ),
        (url("toUpper"), {"$toUpper": {"$literal": {"a": 1}}}, 16007, "can't convert from BSON type object to String"),
        (
            url("substrBytes"),
            {"$substrBytes": ["abc", "a", 1]},
            16034,
            "$substrBytes:  starting index must be a numeric type (is BSON type string)",
        ),
        (
            url("substrBytes"),
            {"$substrBytes": ["abc", 0, "a"]},
            16035,
            "$substrBytes:  length must be a numeric type (is BSON type string)",
        ),
        (
            url("substrBytes"),
            {"$substrBytes": ["abc", -1, 1]},
            50752,
            "$substrBytes:  starting index must be non-negative (got: -1)",
        ),
        (
            url("substrBytes"),
            {"$substrBytes": ["$s", 4, 1]},
            28656,
            "$substrBytes:  Invalid range, starting index is a UTF-8 continuation byte.",
        ),
        (
            url("substrBytes"),
            {"$substrBytes": ["$s", 0, 4]},
            28657,
            "$substrBytes:  Invalid range, ending index is in the middle of a UTF-8 character.",
        ),
        (
            url("substr"),
            {"$substr": ["abc", "a", 1]},
            16034,
            "$substrBytes:  starting index must be a numeric type (is BSON type string)",
        ),
        (url("substrCP"), {"$substrCP": ["abc", "a", 1]}, 34450, None),
        (url("substrCP"), {"$substrCP": ["abc", 0.5, 1]}, 34451, None),
        (url("substrCP"), {"$substrCP": ["abc", 0, "a"]}, 34452, None),
        (url("substrCP"), {"$substrCP": ["abc", 0, 0.5]}, 34453, None),
        (url("substrCP"), {"$substrCP": ["abc", 0, -1]}, 34454, "$substrCP: length must be a nonnegative integer."),
        (
            url("substrCP"),
            {"$substrCP": ["abc", -1, 1]},
            34455,
            "$substrCP: the starting index must be nonnegative integer.",
        ),
        (url("strLenBytes"), {"$strLenBytes": "$n"}, 34473, "$strLenBytes requires a string argument, found: null"),
        (url("strLenCP"), {"$strLenCP": 1}, 34471, "$strLenCP requires a string argument, found: int"),
        (url("indexOfBytes"), {"$indexOfBytes": [1, "a"]}, 40091, None),
        (
            url("indexOfBytes"),
            {"$indexOfBytes": ["a", "$n"]},
            40092,
            "$indexOfBytes requires a string as the second argument, found: null",
        ),
        (
            url("indexOfBytes"),
            {"$indexOfBytes": ["a", "a", "x"]},
            40096,
            '$indexOfBytesrequires an integral starting index, found a value of type: string, with value: "x"',
        ),
        (url("indexOfCP"), {"$indexOfCP": [1, "a"]}, 40093, None),
        (url("indexOfCP"), {"$indexOfCP": ["a", 1]}, 40094, None),
        (
            url("indexOfCP"),
            {"$indexOfCP": ["a", "a", 0, -2]},
            40097,
            "$indexOfCP requires a nonnegative ending index, found: -2",
        ),
        (
            url("trim"),
            {"$trim": {"input": 1}},
            50699,
            "$trim requires its input to be a string, got 1 (of type int) instead.",
        ),
        (
            url("ltrim"),
            {"$ltrim": {"input": "a", "chars": 1}},
            50700,
            "$ltrim requires 'chars' to be a string, got 1 (of type int) instead.",
        ),
        (url("split"), {"$split": [1, "-"]}, 40085, None),
        (url("split"), {"$split": ["a", 1]}, 40086, None),
        (url("split"), {"$split": ["a", ""]}, 40087, "$split requires a non-empty separator"),
        (
            url("replaceOne"),
            {"$replaceOne": {"input": 1, "find": "a", "replacement": "b"}},
            51746,
            "$replaceOne requires that 'input' be a string, found: 1",
        ),
        (
            url("replaceAll"),
            {"$replaceAll": {"input": "$n", "find": 2, "replacement": "b"}},
            51745,
            "$replaceAll requires that 'find' be a string, found: 2",
        ),
        (url("replaceAll"), {"$replaceAll": {"input": "a", "find": "a", "replacement": ["b"]}}, 51744, None),
    ],
)
def test_runtime_errors(source, spec, code, message):
    with pytest.raises(CommandError) as raised:
        evaluate(spec)
    assert raised.value.code == code
    if message is not None:
        assert raised.value.errmsg == message


@pytest.mark.parametrize(
    ("source", "spec", "code"),
    [
        (url("trim"), {"$trim": "x"}, 50696),
        (url("trim"), {"$trim": {"input": "x", "foo": 1}}, 50694),
        (url("rtrim"), {"$rtrim": {"chars": "x"}}, 50695),
        (url("replaceOne"), {"$replaceOne": "x"}, 51751),
        (url("replaceOne"), {"$replaceOne": {"input": "a", "find": "a", "replacement": "b", "x": 1}}, 51750),
        (url("replaceOne"), {"$replaceOne": {"find": "a", "replacement": "b"}}, 51749),
        (url("replaceAll"), {"$replaceAll": {"input": "a", "replacement": "b"}}, 51748),
        (url("replaceAll"), {"$replaceAll": {"input": "a", "find": "a"}}, 51747),
        (url("substrBytes"), {"$substrBytes": ["a", 1]}, 16020),
        (url("split"), {"$split": ["a"]}, 16020),
        (url("regexFind"), {"$regexFind": "x"}, 51103),
        (url("regexFind"), {"$regexFind": {"input": "a", "regex": "a", "x": 1}}, 31024),
        (url("regexFind"), {"$regexFind": {"regex": "a"}}, 31022),
        (url("regexMatch"), {"$regexMatch": {"input": "a"}}, 31023),
        (url("regexFind"), {"$regexFind": {"input": "a", "regex": "("}}, 51111),  # a constant pattern fails early
        (url("regexFind"), {"$regexFind": {"input": "a", "regex": "a", "options": "z"}}, 51108),
        (url("regexFind"), {"$regexFind": {"input": "a", "regex": Regex("a", "i"), "options": "m"}}, 51107),
        (url("regexFind"), {"$regexFind": {"input": "a", "regex": 1}}, 51105),
        (url("regexFind"), {"$regexFind": {"input": "a", "regex": "a", "options": 1}}, 51106),
        (url("regexFind"), {"$regexFind": {"input": "a", "regex": "a\x00"}}, 51109),
    ],
)
def test_parse_errors(source, spec, code):
    with pytest.raises(CommandError) as raised:
        compile_expression(spec)
    assert raised.value.code == code


REGEX_DOC = {"d": "Single LINE description.", "e": "multi\nline", "n": None, "email": "x@a.com y@b.org", "num": 1}


@pytest.mark.parametrize(
    ("source", "spec", "want"),
    [
        (url("regexFind"), {"$regexFind": {"input": "$d", "regex": "line"}}, None),
        (
            url("regexFind"),
            {"$regexFind": {"input": "$d", "regex": "line", "options": "i"}},
            {"match": "LINE", "idx": 7, "captures": []},
        ),
        (
            url("regexFind"),
            {"$regexFind": {"input": "$d", "regex": Regex("line", "i")}},
            {"match": "LINE", "idx": 7, "captures": []},
        ),
        (
            url("regexFind"),
            {"$regexFind": {"input": "cafétéria", "regex": "t(é)(x)?"}},
            {"match": "té", "idx": 4, "captures": ["é", None]},
        ),  # idx counts code points
        (
            url("regexFind"),
            {"$regexFind": {"input": "$e", "regex": "^line", "options": "m"}},
            {"match": "line", "idx": 6, "captures": []},
        ),
        (
            url("regexFind"),
            {"$regexFind": {"input": "a\nb", "regex": "a.b", "options": "s"}},
            {"match": "a\nb", "idx": 0, "captures": []},
        ),
        (
            url("regexFind"),
            {"$regexFind": {"input": "abc", "regex": "a b # spaced", "options": "x"}},
            {"match": "ab", "idx": 0, "captures": []},
        ),
        (url("regexFind"), {"$regexFind": {"input": "$n", "regex": "a"}}, None),
        (url("regexFind"), {"$regexFind": {"input": "a", "regex": "$missing"}}, None),
        (
            url("regexFindAll"),
            {"$regexFindAll": {"input": "$email", "regex": "([a-z]+)@([a-z]+)"}},
            [{"match": "x@a", "idx": 0, "captures": ["x", "a"]}, {"match": "y@b", "idx": 8, "captures": ["y", "b"]}],
        ),
        (
            url("regexFindAll"),
            {"$regexFindAll": {"input": "ab", "regex": "x*"}},
            [{"match": "", "idx": 0, "captures": []}, {"match": "", "idx": 1, "captures": []}],
        ),
        (
            url("regexFindAll"),
            {"$regexFindAll": {"input": "", "regex": "x*"}},
            [{"match": "", "idx": 0, "captures": []}],
        ),
        (
            url("regexFindAll"),
            {"$regexFindAll": {"input": "aaa", "regex": "aa"}},
            [{"match": "aa", "idx": 0, "captures": []}],
        ),
        (url("regexFindAll"), {"$regexFindAll": {"input": "$n", "regex": "a"}}, []),
        (url("regexMatch"), {"$regexMatch": {"input": "$d", "regex": "line", "options": "i"}}, True),
        (url("regexMatch"), {"$regexMatch": {"input": "$d", "regex": "^line"}}, False),
        (url("regexMatch"), {"$regexMatch": {"input": "$missing", "regex": "a"}}, False),
        (url("regexMatch"), {"$regexMatch": {"input": "ab\n", "regex": "b\\Z"}}, True),  # PCRE's \Z
    ],
)
def test_regex_values(source, spec, want):
    same(evaluate(spec, REGEX_DOC), want)


@pytest.mark.parametrize(
    ("spec", "code", "message"),
    [
        ({"$regexMatch": {"input": "$num", "regex": "a"}}, 51104, "$regexMatch needs 'input' to be of type string"),
        (
            {"$regexFind": {"input": "a", "regex": "$num"}},
            51105,
            "$regexFind needs 'regex' to be of type string or regex",
        ),
        (
            {"$regexFindAll": {"input": "a", "regex": "$d", "options": "q"}},
            51108,
            "$regexFindAll invalid flag in regex options: q",
        ),
    ],
)
def test_regex_runtime_errors(spec, code, message):
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/regexFind/#syntax
    with pytest.raises(CommandError) as raised:
        evaluate(spec, REGEX_DOC)
    assert (raised.value.code, raised.value.errmsg) == (code, message)
