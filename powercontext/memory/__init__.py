"""Writes and reads of Memory, Artifacts and Sources: the artifact kernel, remember/revise/retire, exact citations, source capture."""
