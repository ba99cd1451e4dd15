"""Fitting the answer scorer: labelled questions over generated forms and SQuAD
prose, negatives made by withholding the answering document, a split the model
never sees, and the report of what it does there.

Every candidate the extractive generator reads for a question is a row of
:data:`~citations.generators.extractive.features.FEATURES`, labelled 1 when it holds
the gold answer (a form's value is unique to its record, so holding it is being of
the right record). The logistic regression is fitted on the training split; its
thresholds are chosen on out-of-fold probabilities of that split, for precision:

- ``abstain_below``: the least probability at which unanswerable training questions
  (withheld document, a field no record has) are left uncited
  :data:`ABSTAIN_TARGET` of the time;
- ``high_at``: the least probability above which the answer's first quote holds the
  answer :data:`HIGH_PRECISION_TARGET` of the time;
- ``further_at``: the probability a further quote needs, the one that holds the gold
  answer in most answers while :data:`CITATION_MATCH_TARGET` of the quotes hold it.

The test split (other seeds, other layouts' wordings, other SQuAD articles) is only
read for the report.
"""

from __future__ import annotations

import datetime
import json
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from citations.generators.extractive.features import FEATURES, feature_rows
from citations.generators.extractive.generator import ExtractiveGenerator
from citations.generators.extractive.ranking import similarities
from citations.generators.extractive.scorer import MODEL_PATH, AnswerScorer
from evaluation.forms import LAYOUTS, OTHER_KINDS, form_document
from evaluation.scorer_corpus import MemoryIndex
from evaluation.squad import article_markdown, article_title

# targets the thresholds are chosen for (the issue's, with a margin for the split)
ABSTAIN_TARGET = 0.80
HIGH_PRECISION_TARGET = 0.97
CITATION_MATCH_TARGET = 0.80
TRAIN_SEEDS = range(0, 24)
TEST_SEEDS = range(100, 103)
SQUAD_TEST_ARTICLES = ("Victoria_(Australia)", "1973_oil_crisis")
# training articles: this many questions each; the test articles are asked all theirs
SQUAD_QUESTIONS_PER_ARTICLE = 250
WITHHELD_SHARE = 0.3  # of the questions, also asked with their document withheld
ALONE_SHARE = 0.2  # of the SQuAD questions, also asked of their paragraph alone
REPORT_PATH = Path(__file__).parent / "reports" / "answer_scorer.md"


@dataclass
class Asked:
    """One labelled question and what the generator read for it."""

    split: str
    group: str  # a layout or "prose"
    question: str
    answers: tuple[str, ...]  # empty: the documents (as searched) cannot answer
    page: int | None
    paragraph: str  # prose: the gold paragraph
    rows: list[list[float]] = field(default_factory=list)
    labels: list[int] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    pages: list[tuple[int | None, int | None]] = field(default_factory=list)
    records: list[tuple[str, ...]] = field(default_factory=list)


def _holds(text: str, answers: Iterable[str]) -> bool:
    said = " ".join(text.split()).casefold()
    return any(" ".join(a.split()).casefold() in said for a in answers)


def _read(index: MemoryIndex, asked: Asked, *, library: set[str]) -> Asked:
    passages, chunks, vector = index.search(asked.question, library=library)
    generator = ExtractiveGenerator()
    candidates = generator._candidates(asked.question, passages)
    if candidates:
        sims, label_sims = similarities(asked.question, vector, candidates)
        asked.rows = feature_rows(asked.question, candidates, sims, label_sims, passages)
    asked.labels = [int(bool(asked.answers) and _holds(c.text, asked.answers)) for c in candidates]
    asked.texts = [c.text for c in candidates]
    asked.pages = [(chunks[c.passage].page_start, chunks[c.passage].page_end) for c in candidates]
    asked.records = [c.record for c in candidates]
    return asked


def _form_plans(
    index: MemoryIndex, rng: random.Random, split: str, seed: int, prose: set[str]
) -> list[tuple[Asked, set[str]]]:
    """A seed's forms in every layout, its estimates of one and two records, its table
    and its JSON file, with their questions and the library each is asked of.

    A form's question is asked of a library of its document and the SQuAD articles;
    withheld, of the other layouts' documents of its seed (other people's forms) and
    the articles, when none of them names the record it asks about. An estimate of
    one or two records is an app of its own, asked without naming the record."""
    plans: list[tuple[Asked, set[str]]] = []
    documents = [form_document(layout, seed) for layout in LAYOUTS]
    singles = [form_document(layout, seed, count=count) for layout in LAYOUTS for count in (1, 2)]
    others = [make(seed) for make in OTHER_KINDS.values()]
    for document in documents + singles + others:
        index.add(document.name, document.data)
    for document in documents:
        rest = [d for d in documents if d is not document]
        for q in document.questions:
            answers: tuple[str, ...] = (q.answer,) if q.answer else ()
            asked = Asked(split, document.layout, q.question, answers, q.page, "")
            plans.append((asked, prose | {document.name}))
            named_elsewhere = any(q.names in d.names for d in rest)
            if answers and not named_elsewhere and rng.random() < WITHHELD_SHARE:
                withheld = Asked(split, document.layout, q.question, (), None, "")
                plans.append((withheld, prose | {d.name for d in rest}))
    for single in singles:
        for q in single.questions:
            answers = (q.answer, *q.also) if q.answer else ()
            asked = Asked(split, single.layout, q.question, answers, q.page, "")
            plans.append((asked, {single.name}))
    for other in others:
        for q in other.questions:
            answers = (q.answer,) if q.answer else ()
            asked = Asked(split, other.layout, q.question, answers, None, "")
            plans.append((asked, prose | {other.name}))
    return plans


def _prose_plans(
    index: MemoryIndex,
    squad_articles: list[dict],
    rng: random.Random,
    prose: set[str],
    per_article: int,
) -> list[tuple[Asked, set[str]]]:
    """SQuAD questions: a sample of each training article's, every test article's,
    some also asked with their article withheld, and some of a library that is their
    paragraph alone (a short note is answered by its prose as a form by its fields:
    the library's size must not say which)."""
    plans: list[tuple[Asked, set[str]]] = []
    for article in squad_articles:
        name = f"{article_title(article)}.md"
        split = "test" if article["title"] in SQUAD_TEST_ARTICLES else "train"
        qas = [
            (qa, paragraph["context"])
            for paragraph in article["paragraphs"]
            for qa in paragraph["qas"]
        ]
        count = min(len(qas) if split == "test" else per_article, len(qas))
        for qa, context in rng.sample(qas, count):
            answers = tuple(dict.fromkeys(a["text"].strip() for a in qa["answers"]))
            plans.append((Asked(split, "prose", qa["question"], answers, None, context), prose))
            if rng.random() < ALONE_SHARE:
                alone = f"{name[:-3]} note {qa['id']}.md"
                index.add(alone, f"# Note\n\n{context}\n".encode())
                asked = Asked(split, "short_note", qa["question"], answers, None, context)
                plans.append((asked, {alone}))
            if rng.random() < WITHHELD_SHARE:
                withheld = Asked(split, "prose", qa["question"], (), None, "")
                plans.append((withheld, prose - {name}))
    return plans


def gather(
    squad_articles: list[dict],
    *,
    progress: Callable[[str], None] = print,
    train_seeds: range = TRAIN_SEEDS,
    test_seeds: range = TEST_SEEDS,
    squad_per_article: int = SQUAD_QUESTIONS_PER_ARTICLE,
) -> list[Asked]:
    """Every labelled question of both splits, read against one library (the seeds
    and the SQuAD sample can be made smaller for a quick run)."""
    rng = random.Random(7)
    index = MemoryIndex()
    prose = {f"{article_title(a)}.md" for a in squad_articles}
    for article in squad_articles:
        index.add(f"{article_title(article)}.md", article_markdown(article).encode())
    progress(f"SQuAD: {len(squad_articles)} articles converted")
    plans: list[tuple[Asked, set[str]]] = []
    for split, seeds in (("train", train_seeds), ("test", test_seeds)):
        for seed in seeds:
            plans += _form_plans(index, rng, split, seed, prose)
        progress(f"{split}: forms converted")
    plans += _prose_plans(index, squad_articles, rng, prose, squad_per_article)
    progress(f"library: {len(index.chunks)} chunks; {len(plans)} questions")
    gathered = []
    for n, (asked, library) in enumerate(plans, 1):
        gathered.append(_read(index, asked, library=library))
        if n % 200 == 0:
            progress(f"read {n}/{len(plans)} questions")
    return gathered


# the boosted trees' size: enough depth for a kind × record × value-type interaction,
# few enough trees to score ten candidates in a few milliseconds in pure Python
TREES = 120
LEAVES = 15
LEARNING_RATE = 0.1


# features whose growth never makes a candidate less likely to answer (+1) or more
# likely (-1): closer in meaning or words, holding more of the question's rare words,
# its names and the value type asked. Constrained, the trees cannot learn a dip from
# a gap in the training data, which questions unlike it (another script, another
# kind of document) would fall into
MONOTONIC = {
    "similarity": 1,
    "similarity_gap": 1,
    "label_similarity": 1,
    "label_words": 1,
    "overlap": 1,
    "overlap_gap": 1,
    "rare_overlap": 1,
    "rare_overlap_gap": 1,
    "own_share": 1,
    "field_share": 1,
    "holds_field": 1,
    "names_share": 1,
    "names_other": -1,
    "type_held": 1,
    "type_missing": -1,
    "entity_share": 1,
    "absent_share": -1,
    "passage_rank": 1,
    "score_norm": 1,
    "score_gap": 1,
}


def _fit(rows: np.ndarray, labels: np.ndarray) -> AnswerScorer:
    from sklearn.ensemble import HistGradientBoostingClassifier

    model = HistGradientBoostingClassifier(
        monotonic_cst=[MONOTONIC.get(name, 0) for name in FEATURES],
        max_iter=TREES,
        max_leaf_nodes=LEAVES,
        learning_rate=LEARNING_RATE,
        early_stopping=False,
        random_state=0,
    )
    model.fit(rows, labels)
    trees = []
    for (predictor,) in model._predictors:
        trees.append(
            tuple(
                (
                    -1.0 if node["is_leaf"] else float(node["feature_idx"]),
                    float(node["num_threshold"]),
                    float(node["left"]),
                    float(node["right"]),
                    float(node["value"]),
                )
                for node in predictor.nodes
            )
        )
    return AnswerScorer(
        features=FEATURES,
        baseline=float(np.ravel(model._baseline_prediction)[0]),
        trees=tuple(trees),
        abstain_below=0.5,
        high_at=0.9,
        further_at=1.0,
    )


_ABSENT = FEATURES.index("absent_share")


@dataclass(frozen=True)
class Outcome:
    """What the generator's selection makes of one question's scored candidates."""

    asked: Asked
    quoted: list[int]  # candidate indexes, in answer order
    first_probability: float

    @property
    def right(self) -> bool:
        """The first quote holds the answer (on the answer's page, for a PDF)."""
        if not self.quoted or not self.asked.answers:
            return False
        first = self.quoted[0]
        page_start, page_end = self.asked.pages[first]
        on_page = self.asked.page is None or (
            page_start is not None and page_start <= self.asked.page <= (page_end or page_start)
        )
        return bool(self.asked.labels[first]) and on_page

    @property
    def answered(self) -> bool:
        return bool(self.quoted)


def _outcome(asked: Asked, probabilities: list[float], scorer: AnswerScorer) -> Outcome:
    order = sorted(range(len(probabilities)), key=lambda n: -probabilities[n])
    unasked = bool(order) and asked.rows[order[0]][_ABSENT] == 1.0  # as the generator's rule
    if not order or probabilities[order[0]] < scorer.abstain_below or unasked:
        return Outcome(asked, [], probabilities[order[0]] if order else 0.0)
    first = order[0]
    quoted = [first]
    for n in order[1:4]:
        if probabilities[n] < scorer.further_at:
            break
        named = asked.records[first]
        if named and asked.records[n] != named and asked.group != "prose":
            continue
        if asked.texts[n] != asked.texts[first]:
            quoted.append(n)
    return Outcome(asked, quoted, probabilities[first])


def _probabilities(scorer: AnswerScorer, gathered: list[Asked]) -> list[list[float]]:
    return [scorer.probabilities(a.rows) if a.rows else [] for a in gathered]


def _choose(
    gathered: list[Asked], probabilities: list[list[float]], base: AnswerScorer
) -> dict[str, float]:
    """The thresholds, chosen on out-of-fold probabilities of the training split."""
    grid = [round(x, 3) for x in np.arange(0.05, 0.96, 0.01)]
    firsts = [(max(p) if p else 0.0, a) for a, p in zip(gathered, probabilities, strict=True)]
    unanswerable = [p for p, a in firsts if not a.answers or not any(a.labels)]
    abstain = next(
        (t for t in grid if sum(p < t for p in unanswerable) >= ABSTAIN_TARGET * len(unanswerable)),
        grid[-1],
    )
    outcomes = [
        _outcome(a, p, _with(base, abstain_below=abstain, further_at=1.0))
        for a, p in zip(gathered, probabilities, strict=True)
    ]
    high = grid[-1]
    for t in grid:
        chosen = [o for o in outcomes if o.answered and o.first_probability >= t]
        if chosen and sum(o.right for o in chosen) >= HIGH_PRECISION_TARGET * len(chosen):
            high = t
            break
    further, best = 1.0, -1.0
    for t in [g for g in grid if g >= abstain]:
        scorer = _with(base, abstain_below=abstain, further_at=t)
        made = [_outcome(a, p, scorer) for a, p in zip(gathered, probabilities, strict=True)]
        # prose is where a second quote is tempting and most often a neighbour
        cited = [o.asked.labels[n] for o in made for n in o.quoted if o.asked.group == "prose"]
        if cited and sum(cited) < CITATION_MATCH_TARGET * len(cited):
            continue
        held = sum(any(o.asked.labels[n] for n in o.quoted) for o in made if o.asked.answers)
        if held > best:
            further, best = t, held
    return {"abstain_below": abstain, "high_at": high, "further_at": further}


def _with(
    scorer: AnswerScorer,
    *,
    abstain_below: float | None = None,
    high_at: float | None = None,
    further_at: float | None = None,
) -> AnswerScorer:
    from dataclasses import replace

    return replace(
        scorer,
        abstain_below=scorer.abstain_below if abstain_below is None else abstain_below,
        high_at=scorer.high_at if high_at is None else high_at,
        further_at=scorer.further_at if further_at is None else further_at,
    )


def _out_of_fold(gathered: list[Asked], folds: int = 5) -> list[list[float]]:
    """Each training question's probabilities from a model fitted without it."""
    found: list[list[float]] = [[] for _ in gathered]
    for fold in range(folds):
        fit_on = [a for n, a in enumerate(gathered) if n % folds != fold and a.rows]
        rows = np.asarray([r for a in fit_on for r in a.rows])
        labels = np.asarray([y for a in fit_on for y in a.labels])
        scorer = _fit(rows, labels)
        for n, asked in enumerate(gathered):
            if n % folds == fold and asked.rows:
                found[n] = scorer.probabilities(asked.rows)
    return found


def train(gathered: list[Asked]) -> tuple[AnswerScorer, dict]:
    """The scorer fitted on the training split, its thresholds, and the test report."""
    training = [a for a in gathered if a.split == "train"]
    fitted = [a for a in training if a.rows]
    rows = np.asarray([r for a in fitted for r in a.rows])
    labels = np.asarray([y for a in fitted for y in a.labels])
    base = _fit(rows, labels)
    thresholds = _choose(training, _out_of_fold(training), base)
    scorer = _with(
        base,
        abstain_below=thresholds["abstain_below"],
        high_at=thresholds["high_at"],
        further_at=thresholds["further_at"],
    )
    test = [a for a in gathered if a.split == "test"]
    report = evaluate(test, scorer)
    report["training"] = {
        "questions": len(training),
        "candidates": int(len(labels)),
        "positives": int(labels.sum()),
    }
    return scorer, report


def evaluate(asked: list[Asked], scorer: AnswerScorer) -> dict:
    """The figures of the issue's targets on ``asked``, and a reliability table."""
    outcomes = [_outcome(a, scorer.probabilities(a.rows) if a.rows else [], scorer) for a in asked]
    report: dict = {"layouts": {}, "questions": len(asked)}
    answerable = [o for o in outcomes if o.asked.answers]
    for group in [*LAYOUTS, *OTHER_KINDS, "prose", "short_note"]:
        mine = [o for o in answerable if o.asked.group == group]
        if mine:
            report["layouts"][group] = {
                "questions": len(mine),
                "right": sum(o.right for o in mine),
                "share": round(sum(o.right for o in mine) / len(mine), 4),
            }
    prose = [o for o in answerable if o.asked.group == "prose"]
    cited = [o.asked.labels[n] for o in prose for n in o.quoted]
    report["prose"] = {
        "questions": len(prose),
        "gold_in_answer": _share(
            sum(any(o.asked.labels[n] for n in o.quoted) for o in prose), prose
        ),
        "gold_passage_quoted": _share(
            sum(
                any(
                    " ".join(o.asked.texts[n].split()) in " ".join(o.asked.paragraph.split())
                    for n in o.quoted
                )
                for o in prose
            ),
            prose,
        ),
        "citation_match_rate": round(sum(cited) / len(cited), 4) if cited else 0.0,
        "sources_per_answer": round(len(cited) / max(1, sum(o.answered for o in prose)), 3),
    }
    unanswerable = [o for o in outcomes if not o.asked.answers]
    report["unanswerable"] = {
        "questions": len(unanswerable),
        "nothing_cited": _share(sum(not o.answered for o in unanswerable), unanswerable),
    }
    high = [o for o in outcomes if o.answered and o.first_probability >= scorer.high_at]
    report["high_confidence"] = {
        "answers": len(high),
        "correct": _share(sum(o.right for o in high), high),
    }
    bins = []
    answered = [o for o in outcomes if o.answered]
    for low in np.arange(0.0, 1.0, 0.1):
        inside = [
            o
            for o in answered
            if low <= o.first_probability < low + 0.1 or (low >= 0.9 and o.first_probability >= 1.0)
        ]
        if inside:
            bins.append(
                {
                    "probability": f"{low:.1f}–{low + 0.1:.1f}",
                    "answers": len(inside),
                    "mean_probability": round(
                        float(np.mean([o.first_probability for o in inside])), 3
                    ),
                    "correct": round(sum(o.right for o in inside) / len(inside), 3),
                }
            )
    report["reliability"] = bins
    return report


def _share(count: int, of: list) -> float:
    return round(count / len(of), 4) if of else 0.0


def model_document(scorer: AnswerScorer, report: dict) -> dict:
    return {
        "model": f"gradient-boosted trees (scikit-learn HistGradientBoostingClassifier, "
        f"{TREES} trees of {LEAVES} leaves, learning rate {LEARNING_RATE})",
        "fitted_at": datetime.datetime.now(tz=datetime.UTC).isoformat(timespec="seconds"),
        "retrain": "make train-scorer",
        "features": list(scorer.features),
        "baseline": scorer.baseline,
        "trees": [list(map(list, tree)) for tree in scorer.trees],
        "thresholds": {
            "abstain_below": scorer.abstain_below,
            "high_at": scorer.high_at,
            "further_at": scorer.further_at,
        },
        "thresholds_provenance": {
            "abstain_below": f"least probability leaving {ABSTAIN_TARGET:.0%} of unanswerable "
            "training questions uncited (out-of-fold)",
            "high_at": f"least probability whose answers' first quote is right "
            f"{HIGH_PRECISION_TARGET:.0%} of the time (training, out-of-fold)",
            "further_at": "the further-quote probability holding the gold answer in the most "
            f"training answers while {CITATION_MATCH_TARGET:.0%} of prose quotes hold it",
        },
        "test_report": report,
    }


def report_markdown(document: dict, host: str) -> str:
    report = document["test_report"]
    lines = [
        "# Answer scorer: training report",
        "",
        f"Fitted {document['fitted_at']} by `make train-scorer` on {host}.",
        f"Training split: {report['training']['questions']} questions, "
        f"{report['training']['candidates']} candidates ({report['training']['positives']} holding "
        "the answer); generated forms of seeds "
        f"{TRAIN_SEEDS.start}–{TRAIN_SEEDS.stop - 1} in every layout, SQuAD articles but "
        f"{', '.join(SQUAD_TEST_ARTICLES)}, and the same questions with their document "
        "withheld. The figures below are of the **test split** only (seeds "
        f"{TEST_SEEDS.start}–{TEST_SEEDS.stop - 1}, the SQuAD articles "
        f"{', '.join(SQUAD_TEST_ARTICLES)}), which nothing was fitted or chosen on.",
        "",
        "## Thresholds",
        "",
    ]
    for name, value in document["thresholds"].items():
        lines.append(f"- `{name}` = {value}: {document['thresholds_provenance'][name]}")
    lines += ["", "## Right value from the right record (and page), per layout", ""]
    lines += ["| layout | questions | right | share |", "|---|---|---|---|"]
    for layout, figures in report["layouts"].items():
        lines.append(
            f"| {layout} | {figures['questions']} | {figures['right']} | {figures['share']:.3f} |"
        )
    prose = report["prose"]
    lines += [
        "",
        "## Prose (SQuAD, unseen articles)",
        "",
        f"- gold answer in the answer: {prose['gold_in_answer']:.3f}",
        f"- gold passage quoted: {prose['gold_passage_quoted']:.3f}",
        f"- citation match rate: {prose['citation_match_rate']:.3f}",
        f"- sources per answer: {prose['sources_per_answer']}",
        "",
        "## Unanswerable (document withheld, a field no record has)",
        "",
        f"- nothing cited: {report['unanswerable']['nothing_cited']:.3f} of "
        f"{report['unanswerable']['questions']}",
        "",
        "## High confidence",
        "",
        f"- {report['high_confidence']['answers']} answers marked high, "
        f"{report['high_confidence']['correct']:.3f} correct",
        "",
        "## Reliability (first quote's probability against how often it is right)",
        "",
        "| probability | answers | mean probability | right |",
        "|---|---|---|---|",
    ]
    for row in report["reliability"]:
        cells = (row["probability"], row["answers"], row["mean_probability"], row["correct"])
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


def write(document: dict, host: str) -> None:
    MODEL_PATH.write_text(json.dumps(document, separators=(",", ":")) + "\n")
    REPORT_PATH.parent.mkdir(parents=True, exist_ok=True)
    REPORT_PATH.write_text(report_markdown(document, host))
