import cProfile, pstats, time
from pathlib import Path
import pytest
from citations.services import query_execute
from tests.citations.conftest import Library
from tests.support import squad

pytestmark = pytest.mark.django_db

def test_profile(library: Library, corpus: Path) -> None:
    questions = squad.questions(corpus)[:150]
    for q in questions[:5]:
        query_execute(app=library.squad, question=q.text)
    prof = cProfile.Profile()
    t = time.perf_counter()
    prof.enable()
    for q in questions[5:]:
        query_execute(app=library.squad, question=q.text)
    prof.disable()
    print("ms per ask", (time.perf_counter() - t) / (len(questions) - 5) * 1000)
    prof.dump_stats("/tmp/ask.prof")
