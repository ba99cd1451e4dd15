"""Planning steps: the extractive planner splits a question by its structure (the
shapes the issue names), a simple question stays one step, the cap is said in the
notes; a model's proposed steps are read strictly, with a recorded fallback."""

from __future__ import annotations

import json

import pytest

from citations.reasoning.decompose import StepPlan, question_decompose
from citations.reasoning.proposals import plan_read


def _questions(question: str, max_steps: int = 5) -> list[str]:
    return [s.question for s in question_decompose(question, max_steps=max_steps).steps]


@pytest.mark.parametrize(
    ("question", "steps"),
    [
        (  # several questions in one
            "How long are camera recordings kept? Who may sign contracts above one million euros?",
            [
                "How long are camera recordings kept?",
                "Who may sign contracts above one million euros?",
            ],
        ),
        (  # "X and Y" with a shared head
            "What is the length of the notice period and the probation period?",
            [
                "What is the length of the notice period?",
                "What is the length of the probation period?",
            ],
        ),
        (  # "X and Y" whose verb belongs to both
            "How long are camera recordings and customer contracts kept?",
            ["How long are camera recordings kept?", "How long are customer contracts kept?"],
        ),
        (  # two clauses
            "How many days of annual leave do full-time employees receive and how often must "
            "passwords be changed?",
            [
                "How many days of annual leave do full-time employees receive?",
                "How often must passwords be changed?",
            ],
        ),
        (  # a comparison
            "What is the difference between annual leave and sick leave?",
            ["What is annual leave?", "What is sick leave?"],
        ),
        ("Compare annual leave with sick leave.", ["What is annual leave?", "What is sick leave?"]),
        ("Train travel vs. visitor badges?", ["What is Train travel?", "What is visitor badges?"]),
        (  # both
            "Does the retention rule apply to both camera recordings and customer contracts?",
            [
                "Does the retention rule apply to camera recordings?",
                "Does the retention rule apply to customer contracts?",
            ],
        ),
        (  # a comma list
            "What are the rules for passwords, visitor badges and train travel?",
            [
                "What are the rules for passwords?",
                "What are the rules for visitor badges?",
                "What are the rules for train travel?",
            ],
        ),
        (  # a numbered list
            "Answer these:\n1. Who approves annual leave?\n2. Where are visitor badges returned?",
            ["Who approves annual leave?", "Where are visitor badges returned?"],
        ),
        (  # a bulleted list of topics under a lead
            "What is the rule for\n- passwords\n- visitor badges",
            ["What is the rule for passwords?", "What is the rule for visitor badges?"],
        ),
    ],
)
def test_a_question_that_asks_several_things_is_split(question: str, steps: list[str]) -> None:
    assert _questions(question) == steps


@pytest.mark.parametrize(
    "question",
    [
        "How often must passwords be changed?",
        "What are the terms and conditions?",  # a fixed pair of single words
        "What is the policy on drugs and alcohol?",
        "What happens to research and development costs?",
        "Who founded the company and when?",  # "when?" alone asks nothing new
        "   ",
    ],
)
def test_a_simple_question_stays_one_step(question: str) -> None:
    plan = question_decompose(question, max_steps=5)
    assert len(plan.steps) == 1 and plan.notes == []


def test_a_follow_up_that_refers_back_uses_the_previous_answer() -> None:
    plan = question_decompose(
        "Who operates the surveillance cameras and how long are their recordings kept?",
        max_steps=5,
    )
    assert plan.steps == [
        StepPlan("Who operates the surveillance cameras?"),
        StepPlan("How long are their recordings kept?", (1,)),
    ]


def test_more_steps_than_the_maximum_are_capped_and_the_notes_say_so() -> None:
    plan = question_decompose("One thing? Two things? Three things? Four things?", max_steps=2)
    assert [s.question for s in plan.steps] == ["One thing?", "Two things?"]
    assert "capped at 2 steps" in plan.notes[-1] and "Four things?" in plan.notes[-1]


def test_empty_sub_questions_are_left_out() -> None:
    assert _questions("Who approves annual leave? ? ?? Where are badges returned?") == [
        "Who approves annual leave?",
        "Where are badges returned?",
    ]


def _steps_json(*questions: str, uses: dict | None = None) -> str:
    uses = uses or {}
    return json.dumps(
        {"steps": [{"question": q, "uses": uses.get(i + 1, [])} for i, q in enumerate(questions)]}
    )


def test_the_models_steps_are_read_with_their_uses() -> None:
    plan = plan_read(_steps_json("A?", "B?", uses={2: [1, 2, 7, True]}), "A and B?", max_steps=5)
    assert plan.proposed_by == "model"
    assert plan.steps == [StepPlan("A?"), StepPlan("B?", (1,))]  # only earlier steps count


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        ("", "empty_reply"),
        ("here are the steps: 1. A 2. B", "invalid_json"),
        ('{"steps": []}', "no_steps"),
        ('{"plan": ["A?"]}', "no_steps"),
        ('["A?", "B?"]', "no_steps"),
        ('{"steps": ["A?", "B?"]}', "invalid_step"),
        ('{"steps": [{"question": 7}]}', "invalid_step"),
        ('{"steps": [{"question": "  "}, {"question": ""}]}', "empty_steps"),
    ],
)
def test_malformed_steps_fall_back_to_one_step_and_say_why(reply: str, code: str) -> None:
    plan = plan_read(reply, "What is A and what is B?", max_steps=5)
    assert plan.proposed_by == "fallback"
    assert plan.steps == [StepPlan("What is A and what is B?")]
    assert f"({code})" in plan.notes[0]


def test_a_fenced_reply_is_read_and_empty_steps_and_excess_are_noted() -> None:
    reply = "```json\n" + _steps_json("A?", " ", "B?", "C?") + "\n```"
    plan = plan_read(reply, "q", max_steps=2)
    assert [s.question for s in plan.steps] == ["A?", "B?"]
    assert any("1 empty sub-question" in n for n in plan.notes)
    assert "capped at 2 steps" in plan.notes[-1]
