"""What the spaCy pipeline found in sentences it analysed before, for a process that extracts the same
sentences under several settings (the evaluation does it a dozen times over).

A doc's tags, token vectors and entities depend on the doc alone, not on its batch: the pipeline's
products are exact (spacy_arithmetic), and each doc is decoded on its own. A doc equal to one analysed
before (the same tokens, spaces and norms, sentence starts and preset entities) gets a copy of what was
found then instead of the same computation again.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from typing import Any, cast

from numpy.typing import NDArray
from spacy.attrs import ENT_IOB, ENT_TYPE, NORM, SENT_START, TAG
from spacy.tokens import Doc
from thinc.types import Ints2d

Array = NDArray[Any]
Analyse = Callable[[list[Doc]], Iterable[Doc]]
Key = tuple[tuple[str, ...], bytes]

# Sentences remembered per kind of analysis, the least recently asked for forgotten first: the evaluation's
# few thousand sentences fit, and the token vectors a process holds stay bounded.
REMEMBERED = 16_384
TAGGING, ENTITIES = "tagging", "entities"


class RememberedAnalyses:
    """Tags with token vectors, and entities, of the docs analysed while it is in use, by their tokens."""

    def __init__(self, limit: int = REMEMBERED) -> None:
        self.limit = limit
        self.found: dict[str, OrderedDict[Key, tuple[Ints2d, Array | None]]] = {
            TAGGING: OrderedDict(),
            ENTITIES: OrderedDict(),
        }
        self.recalled = 0

    def analysed(self, kind: str, docs: Iterable[Doc], analyse: Analyse) -> Iterator[Doc]:
        """`docs`, each analysed by `analyse` (in place, as spaCy's components do) unless its tokens were
        analysed so before, then given what was found then."""
        docs = list(docs)
        keys = {id(doc): key(doc) for doc in docs}
        fresh = [doc for doc in docs if not self._recall(kind, doc, keys[id(doc)])]
        for doc in analyse(fresh):
            self._remember(kind, doc, keys[id(doc)])
        return iter(docs)

    def _recall(self, kind: str, doc: Doc, key: Key) -> bool:
        found = self.found[kind]
        if key not in found:
            return False
        found.move_to_end(key)
        values, tensor = found[key]
        doc.from_array(ATTRIBUTES[kind], values)
        if tensor is not None:
            doc.tensor = tensor.copy()
        self.recalled += 1
        return True

    def _remember(self, kind: str, doc: Doc, key: Key) -> None:
        found = self.found[kind]
        tensor = doc.tensor.copy() if kind == TAGGING else None
        found[key] = (cast(Ints2d, doc.to_array(ATTRIBUTES[kind])), tensor)
        found.move_to_end(key)
        if len(found) > self.limit:
            found.popitem(last=False)


ATTRIBUTES = {TAGGING: [TAG], ENTITIES: [ENT_IOB, ENT_TYPE]}


# Set before the analysis and read by it: the norms (the token vectors' input), sentence starts (no entity
# crosses one) and entities already set (kept by the recogniser).
INPUTS = [NORM, SENT_START, ENT_IOB, ENT_TYPE]


def key(doc: Doc) -> Key:
    """What a doc's analysis depends on, read before it: its tokens with the space after each, and the
    `INPUTS` attributes of each."""
    return tuple(token.text_with_ws for token in doc), doc.to_array(INPUTS).tobytes()
