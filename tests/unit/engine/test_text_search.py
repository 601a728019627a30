"""Text search as mongod's FTS (text index version 3): stop words of the 15 languages, tokens, the
``$search`` grammar, scores, compound text indexes and ``$text`` inside ``$or``.

Manual: https://www.mongodb.com/docs/manual/core/indexes/index-types/index-text/ (and its pages on
text index languages, compound text indexes and restrictions), and
https://www.mongodb.com/docs/manual/reference/operator/query/text/. Where the manual is silent,
mongod's source (src/mongo/db/fts: fts_unicode_tokenizer.cpp, fts_query_impl.cpp, fts_spec.cpp,
fts_index_format.cpp, fts_element_iterator.cpp; src/mongo/db/query/query_planner.cpp).
"""

from __future__ import annotations

from typing import Any

import pytest
from pymongo.errors import OperationFailure, WriteError


def ids(cursor: Any) -> list[Any]:
    return sorted(doc["_id"] for doc in cursor)


def code_of(fn: Any) -> int:
    with pytest.raises(OperationFailure) as info:
        fn()
    return info.value.code


def search(db: Any, text: str, **options: Any) -> list[Any]:
    return ids(db.c.find({"$text": {"$search": text, **options}}))


# -- stop words and tokens -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("language", "sentence", "stop_word", "content_word"),
    [
        # One stop word of each list in mongod's src/mongo/db/fts/stop_words_<language>.txt.
        ("german", "und die Katze", "die", "katze"),
        ("french", "le chat noir", "le", "chat"),
        ("spanish", "el perro grande", "el", "perro"),
        ("italian", "il gatto nero", "il", "gatto"),
        ("dutch", "de kat slaapt", "de", "kat"),
        ("russian", "и кошка спит", "и", "кошка"),
        ("swedish", "och katten sover", "och", "katten"),
        ("danish", "og katten sover", "og", "katten"),
        ("norwegian", "og katten sover", "og", "katten"),
        ("portuguese", "o gato preto", "o", "gato"),
        ("finnish", "ja kissa nukkuu", "ja", "kissa"),
        ("hungarian", "a macska alszik", "a", "macska"),
        ("romanian", "dar pisica doarme", "dar", "pisica"),
        ("turkish", "ve kedi uyuyor", "ve", "kedi"),
    ],
)
def test_every_language_drops_its_stop_words(
    db: Any, language: str, sentence: str, stop_word: str, content_word: str
) -> None:
    db.c.insert_one({"_id": 1, "t": sentence})
    db.c.create_index([("t", "text")], default_language=language)
    assert search(db, stop_word) == []
    assert search(db, content_word) == [1]


def test_none_keeps_stop_words_and_does_not_stem(db: Any) -> None:
    db.c.insert_one({"_id": 1, "t": "the running dogs"})
    db.c.create_index([("t", "text")], default_language="none")
    assert search(db, "the") == [1]
    assert search(db, "dogs") == [1]
    assert search(db, "dog") == []


def test_the_document_language_field_chooses_the_stop_words(db: Any) -> None:
    db.c.insert_many([{"_id": 1, "t": "die Katze", "language": "german"}, {"_id": 2, "t": "die hard"}])
    db.c.create_index([("t", "text")])
    # "die" is a German stop word, not an English one: only the English document holds the term.
    assert search(db, "die") == [2]


def test_a_sub_document_language_field_applies_to_its_strings(db: Any) -> None:
    # fts_element_iterator.cpp: each sub-document's language_override field sets its strings' language.
    db.c.insert_one({"_id": 1, "a": {"b": "laufen", "language": "german"}})
    db.c.create_index([("a.b", "text")])
    assert search(db, "laufen", **{"$language": "german"}) == [1]  # the German stem "lauf"
    assert search(db, "laufen") == []  # the English stem is "laufen", which the index does not hold


def test_the_stemmer_sees_diacritics_before_they_are_stripped(db: Any) -> None:
    # fts_unicode_tokenizer.cpp stems, then strips diacritics: French "créées" stems to "cré", kept as "cre".
    db.c.insert_one({"_id": 1, "t": "créées"})
    db.c.create_index([("t", "text")], default_language="french")
    assert search(db, "cre") == [1]


def test_tokens_split_at_unicode_delimiters_only(db: Any) -> None:
    # The delimiters are White_Space, Dash, Hyphen, Quotation_Mark, Terminal_Punctuation, Pattern_Syntax
    # and STerm code points: "_" is none of them, so "snake_case" is one token; "-" and "/" split.
    db.c.insert_many([{"_id": 1, "t": "snake_case"}, {"_id": 2, "t": "kebab-case"}, {"_id": 3, "t": "path/name"}])
    db.c.create_index([("t", "text")], default_language="none")
    assert search(db, "snake") == []
    assert search(db, "snake_case") == [1]
    assert search(db, "kebab") == [2]
    assert search(db, "name") == [3]


def test_an_apostrophe_joins_english_words_only(db: Any) -> None:
    db.c.insert_many([{"_id": 1, "t": "l'homme", "language": "french"}, {"_id": 2, "t": "l'homme"}])
    db.c.create_index([("t", "text")])
    # French splits at the apostrophe ("homme" stems to "homm"); English keeps one token.
    assert search(db, "homme", **{"$language": "french"}) == [1]


# -- the $search grammar --------------------------------------------------------------------------


def test_the_search_string_parses_as_mongods(db: Any) -> None:
    # fts_query_impl.cpp: words of a phrase are terms too; a "-" negates up to the next space.
    db.c.insert_one({"_id": 1, "content": "some data"})
    db.c.create_index([("content", "text")], default_language="none")
    explained = db.c.find({"$text": {"$search": '"a" -b -"c"'}}).explain()["queryPlanner"]["winningPlan"]
    assert explained["parsedTextQuery"] == {
        "terms": ["a"],
        "negatedTerms": ["b"],
        "phrases": ["a"],
        "negatedPhrases": ["c"],
    }


def test_negated_phrases_and_chained_negations(db: Any) -> None:
    db.c.insert_many(
        [
            {"_id": 1, "t": "red apple pie"},
            {"_id": 2, "t": "green apple tart"},
            {"_id": 3, "t": "apple crumble and pie"},
        ]
    )
    db.c.create_index([("t", "text")], default_language="none")
    assert search(db, 'apple -"apple pie"') == [2, 3]
    assert search(db, "apple -pie-tart") == []  # "-pie-tart" negates both words
    assert search(db, "apple - pie") == [1, 2, 3]  # a lone "-" negates nothing


def test_search_operand_errors_are_mongods(db: Any) -> None:
    # extensions_callback.cpp reads the fields with bsonExtract*Field: NoSuchKey, TypeMismatch.
    db.c.create_index([("t", "text")])
    assert code_of(lambda: list(db.c.find({"$text": {}}))) == 4
    assert code_of(lambda: list(db.c.find({"$text": {"$search": 1}}))) == 14
    assert code_of(lambda: list(db.c.find({"$text": {"$search": "x", "$caseSensitive": 1}}))) == 14
    assert code_of(lambda: list(db.c.find({"$text": {"$search": "x", "$bad": 1}}))) == 2
    assert code_of(lambda: list(db.c.find({"$text": {"$search": "x", "$language": "klingon"}}))) == 2


def test_a_string_that_is_its_term_scores_a_tenth_more(db: Any) -> None:
    # fts_spec.cpp _scoreStringV2: weight * freq * (0.5 + 0.5 * count / tokens), times 1.1 when the
    # field's string is the term itself.
    db.c.insert_many([{"_id": 1, "t": "cat"}, {"_id": 2, "t": "cats"}, {"_id": 3, "t": "cat cat dog"}])
    db.c.create_index([("t", "text")])
    scores = {d["_id"]: d["s"] for d in db.c.find({"$text": {"$search": "cat"}}, {"s": {"$meta": "textScore"}})}
    assert scores[1] == pytest.approx(1 * 1.0 * 1.0 * 1.1)
    assert scores[2] == pytest.approx(1.0)
    # "cat" twice in three tokens: freq 1 + 1/2, coefficient 0.5 + 0.5 * 2/3.
    assert scores[3] == pytest.approx(1.5 * (0.5 + 0.5 * 2 / 3))


# -- compound text indexes ----------------------------------------------------------------------


def test_a_compound_text_index_lists_its_other_keys_around_the_text_key(db: Any) -> None:
    db.c.create_index([("a", 1), ("t", "text"), ("b", -1)])
    info = db.c.index_information()["a_1_t_text_b_-1"]
    assert info["key"] == [("a", 1), ("_fts", "text"), ("_ftsx", 1), ("b", -1)]
    assert info["weights"] == {"t": 1}


def test_a_compound_text_search_needs_equality_on_every_prefix_field(db: Any) -> None:
    db.c.insert_many(
        [
            {"_id": 1, "a": 1, "t": "foo bar"},
            {"_id": 2, "a": 2, "t": "foo"},
            {"_id": 3, "t": "foo"},  # a missing field is indexed as null
        ]
    )
    db.c.create_index([("a", 1), ("t", "text")])
    assert ids(db.c.find({"a": 1, "$text": {"$search": "foo"}})) == [1]
    assert ids(db.c.find({"a": {"$eq": 2}, "$text": {"$search": "foo"}})) == [2]
    assert ids(db.c.find({"$and": [{"a": None}, {"$text": {"$search": "foo"}}]})) == [3]
    # query_planner.cpp: without an equality for "a" the text index cannot be used (NoQueryExecutionPlans).
    assert code_of(lambda: list(db.c.find({"$text": {"$search": "foo"}}))) == 291
    assert code_of(lambda: list(db.c.find({"a": {"$in": [1, 2]}, "$text": {"$search": "foo"}}))) == 291


def test_suffix_fields_filter_the_text_matches(db: Any) -> None:
    db.c.insert_many([{"_id": 1, "t": "foo", "b": 1}, {"_id": 2, "t": "foo", "b": 2}])
    db.c.create_index([("t", "text"), ("b", 1)])
    assert ids(db.c.find({"$text": {"$search": "foo"}, "b": 2})) == [2]


def test_an_array_in_a_compound_text_key_cannot_be_indexed(db: Any) -> None:
    # fts_index_format.cpp extractNonFTSKeyElement: CannotBuildIndexKeys (201).
    db.c.create_index([("a", 1), ("t", "text")])
    with pytest.raises(WriteError) as info:
        db.c.insert_one({"a": [1, 2], "t": "foo"})
    assert info.value.code == 201
    db.d.insert_one({"t": "foo", "a": [1]})
    assert code_of(lambda: db.d.create_index([("t", "text"), ("a", 1)])) == 201


@pytest.mark.parametrize(
    "key",
    [
        [("a", "text"), ("b", 1), ("c", "text")],  # text fields must be adjacent
        [("a", 2), ("t", "text")],  # other keys are 1 or -1
    ],
)
def test_bad_compound_text_keys_are_refused(db: Any, key: list[tuple[str, Any]]) -> None:
    assert code_of(lambda: db.c.create_index(key)) == 67  # fts_spec.cpp fixSpec: CannotCreateIndex


# -- $text inside $or ------------------------------------------------------------------------


def test_text_inside_or_unions_the_branches(db: Any) -> None:
    db.c.insert_many([{"_id": 1, "t": "cats run", "x": 5}, {"_id": 2, "t": "dogs", "x": 7}, {"_id": 3, "t": "owls"}])
    db.c.create_index([("t", "text")])
    db.c.create_index([("x", 1)])
    found = list(db.c.find({"$or": [{"$text": {"$search": "cat"}}, {"x": 7}]}, {"s": {"$meta": "textScore"}}))
    assert sorted(d["_id"] for d in found) == [1, 2]
    scores = {d["_id"]: d.get("s") for d in found}
    assert scores[1] == pytest.approx(0.75)  # 1 of 2 tokens: 0.5 + 0.5 / 2
    assert scores[2] is None  # matched by the other branch only: no text score
    assert db.c.count_documents({"$or": [{"$text": {"$search": "owl"}}, {"x": 5}]}) == 2
    assert ids(db.c.find({"x": {"$gt": 6}, "$or": [{"$text": {"$search": "cat"}}, {"x": 7}]})) == [2]
    assert db.c.delete_many({"$or": [{"$text": {"$search": "owl"}}, {"x": 5}]}).deleted_count == 2


def test_every_other_branch_of_the_or_must_be_indexed(db: Any) -> None:
    db.c.insert_one({"t": "cat", "y": 1})
    db.c.create_index([("t", "text")])
    assert code_of(lambda: list(db.c.find({"$or": [{"$text": {"$search": "cat"}}, {"y": 1}]}))) == 291


def test_text_where_mongod_refuses_it(db: Any) -> None:
    db.c.create_index([("t", "text")])
    db.c.create_index([("x", 1)])
    text = {"$text": {"$search": "cat"}}
    # canonical_query.cpp: not under $nor, and at most one $text.
    assert code_of(lambda: list(db.c.find({"$nor": [text, {"x": 1}]}))) == 2
    assert code_of(lambda: list(db.c.find({"$or": [text, text]}))) == 2
    # expression_parser.cpp parseText: not where the query has no text search (a validator).
    assert code_of(lambda: db.create_collection("v", validator=text)) == 2


def test_text_inside_or_in_a_pipeline(db: Any) -> None:
    db.c.insert_many([{"_id": 1, "t": "cat"}, {"_id": 2, "t": "dog", "x": 7}])
    db.c.create_index([("t", "text")])
    db.c.create_index([("x", 1)])
    out = list(db.c.aggregate([{"$match": {"$or": [{"$text": {"$search": "cat"}}, {"x": 7}]}}, {"$sort": {"_id": 1}}]))
    assert [d["_id"] for d in out] == [1, 2]


def test_a_unique_text_index_refuses_equal_entries(db: Any) -> None:
    # fts_index_format.cpp: an entry is (prefix values, term, score, suffix values); unique compares them
    # all, so two documents clash only when a term has the same score in both.
    db.c.create_index([("a", 1), ("t", "text")], unique=True)
    db.c.insert_many([{"a": 1, "t": "foo"}, {"a": 1, "t": "foo bar"}, {"a": 2, "t": "foo"}])
    with pytest.raises(WriteError) as info:
        db.c.insert_one({"a": 1, "t": "foo"})  # "foo" scores 1.1 again under a: 1
    assert info.value.code == 11000
