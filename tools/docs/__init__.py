"""The docs site's reference pages, generated from the code (`python -m tools.docs`).

`pages()` renders every page in memory; `tests/docs/test_reference_pages.py` compares them with
the committed files, so a page cannot drift from the code it describes.
"""
