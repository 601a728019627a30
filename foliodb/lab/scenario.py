"""What a lab scenario is: competing designs of one system, and the questions
every design must answer alike.

A scenario generates one data set (plain Python values, from a seeded
``random.Random``), each design loads it its own way into a database of its
own, and then the same questions, with the same arguments in the same order,
run against each design. A question's answer is a plain value in a form every
design can produce; the lab compares them, so a design that answers differently
shows up (as a snapshot and a live reference do after a price change, which is
the point of that scenario: ``same_answer=False`` says the difference is
expected, and why).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pymongo.database import Database

Db = Database[Any]
Answer = Callable[[Db, Any], Any]


@dataclass(frozen=True)
class Question:
    """One operation of the workload: ``read`` or ``write``; ``weight`` is its share
    of the operations (the proportions the texts describe); ``arguments`` draws
    the argument of one call from the data set."""

    name: str
    kind: str
    weight: int
    arguments: Callable[[Any, random.Random], Any]
    same_answer: bool = True
    note: str = ""


@dataclass(frozen=True)
class Design:
    """One way to store the system: ``load`` writes the data set, ``answers`` maps
    each question's name to the function answering it; ``available`` says
    whether the database supports the design (a time-series collection)."""

    name: str
    summary: str
    load: Callable[[Db, Any], None]
    answers: Mapping[str, Answer]
    available: Callable[[Db], bool] = field(default=lambda db: True)


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    claim: str
    generate: Callable[[int, random.Random], Any]
    questions: tuple[Question, ...]
    designs: tuple[Design, ...]
