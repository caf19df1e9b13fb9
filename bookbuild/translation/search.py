"""Chinese words in the Chinese edition's search index: jieba and the glossary's terms."""
from __future__ import annotations

import re
from pathlib import Path

from .terminology import glossary_terms

# -- search: Chinese words in the index ---------------------------------------------------------------------
# Sphinx's Chinese search (sphinx/search/zh.py) cuts the text into words with jieba (requirements.in), and only
# when jieba imports: without it the index holds no Chinese word and the search finds pages by their titles alone.
# The browser looks a query up as one word: jieba's own dictionary cuts 位置编码 into 位置 + 编码 and 束搜索 into
# 束 + 搜索, so a reader typing the book's terms would find nothing. The glossary's Chinese terms are therefore
# added to jieba's dictionary (Sphinx's html_search_options "dict"); its search mode indexes the parts as well.


def require_jieba() -> None:
    import importlib.util

    if importlib.util.find_spec("jieba") is None:
        raise SystemExit("jieba is not installed (requirements.in; run `make install`): without it the Chinese "
                         "edition's search index holds no Chinese word")


def search_words() -> list[str]:
    """The glossary's Chinese terms that jieba can take as words (Han characters only, no spaces), in order."""
    words = [z for _, _, zhs in glossary_terms() for z in zhs if re.fullmatch(r"[\u3400-\u9fff]{2,}", z)]
    return list(dict.fromkeys(words))


def search_dictionary(folder: Path) -> Path:
    """jieba's user dictionary (one word a line) of the glossary's terms, for html_search_options["dict"], written
    into ``folder`` under a name that changes with its words only: Sphinx rewrites every page (and re-indexes it)
    when the option changes, so an unchanged dictionary keeps an incremental build incremental."""
    import hashlib

    text = "".join(f"{w}\n" for w in search_words())
    dest = folder / f"search-words-{hashlib.sha256(text.encode()).hexdigest()[:12]}.txt"
    folder.mkdir(parents=True, exist_ok=True)
    if not dest.exists():
        dest.write_text(text, encoding="utf-8")
    return dest
