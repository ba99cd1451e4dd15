"""End users' web pages for answers: ask, answer with [n] links, source viewer, history."""
