"""The one text normalisation for what is searched: a query and a stub are embedded as `normalise` leaves them.

Unicode NFKC (fullwidth letters, ligatures and compatibility forms become their plain letters), the zero-width
space U+200B becomes a space (it marks a word boundary; the tokenizer would otherwise drop it and join the two words:
"find\\u200bhotels" searched as "findhotels" returned theatre and police APIs for a hotel query), every other format
character (Unicode category Cf: zero-width joiners and non-joiners, the word joiner, BOM, bidi marks) is removed,
and runs of whitespace become one space. None of the 2,548 stored benchmark queries changes token by token under
it, so no stored figure moves. Registry documents are embedded as they are: normalising them moved LiveMCPBench's
RtP top-5 on 6 of 94 queries, for the worse (README, "Text normalisation"; benchmarks/document_normalisation.py).
"""
from __future__ import annotations

import re
import unicodedata

ZERO_WIDTH_SPACE = "\u200b"
_SPACES = re.compile(r"\s+")


def normalise(text: str) -> str:
    text = text.replace(ZERO_WIDTH_SPACE, " ")
    text = "".join(char for char in text if unicodedata.category(char) != "Cf")
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", text)).strip()
