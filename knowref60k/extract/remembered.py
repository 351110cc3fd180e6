"""What the spaCy pipeline found in sentences it analysed before, for a process that extracts the same
sentences under several settings (the evaluation does it a dozen times over).

A doc's tags, token vectors and entities depend on its tokens alone: the pipeline's products are exact
whatever the batch (spacy_arithmetic), and each doc is decoded on its own. A doc whose tokens were
analysed before gets a copy of what was found then instead of the same computation again.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from typing import Any, cast

from numpy.typing import NDArray
from spacy.attrs import ENT_IOB, ENT_TYPE, TAG
from spacy.tokens import Doc
from thinc.types import Ints2d

Array = NDArray[Any]
Analyse = Callable[[list[Doc]], Iterable[Doc]]

log = logging.getLogger(__name__)

# Sentences remembered per kind of analysis, the least recently asked for forgotten first: the evaluation's
# few thousand sentences fit, and the token vectors a process holds stay bounded.
REMEMBERED = 16_384
TAGGING, ENTITIES = "tagging", "entities"


class RememberedAnalyses:
    """Tags with token vectors, and entities, of the docs analysed while it is in use, by their tokens."""

    def __init__(self, limit: int = REMEMBERED) -> None:
        self.limit = limit
        self.found: dict[str, OrderedDict[tuple[str, ...], tuple[Ints2d, Array | None]]] = {
            TAGGING: OrderedDict(),
            ENTITIES: OrderedDict(),
        }
        self.recalled = 0

    def analysed(self, kind: str, docs: Iterable[Doc], analyse: Analyse) -> Iterator[Doc]:
        """`docs`, each analysed by `analyse` (in place, as spaCy's components do) unless its tokens were
        analysed so before, then given what was found then."""
        docs = list(docs)
        fresh = [doc for doc in docs if not self._recall(kind, doc)]
        for doc in analyse(fresh):
            self._remember(kind, doc)
        return iter(docs)

    def _recall(self, kind: str, doc: Doc) -> bool:
        found = self.found[kind]
        key = tokens(doc)
        if key not in found:
            return False
        found.move_to_end(key)
        values, tensor = found[key]
        doc.from_array(ATTRIBUTES[kind], values)
        if tensor is not None:
            doc.tensor = tensor.copy()
        self.recalled += 1
        return True

    def _remember(self, kind: str, doc: Doc) -> None:
        found = self.found[kind]
        tensor = doc.tensor.copy() if kind == TAGGING else None
        found[tokens(doc)] = (cast(Ints2d, doc.to_array(ATTRIBUTES[kind])), tensor)
        if len(found) > self.limit:
            found.popitem(last=False)


ATTRIBUTES = {TAGGING: [TAG], ENTITIES: [ENT_IOB, ENT_TYPE]}


def tokens(doc: Doc) -> tuple[str, ...]:
    """A doc's tokens with the space after each: docs with the same ones are analysed alike."""
    return tuple(token.text_with_ws for token in doc)
