"""Language filter: seeded langdetect on the few sentences that survive every other filter."""

from __future__ import annotations

from functools import lru_cache

from langdetect import DetectorFactory, detect
from langdetect.lang_detect_exception import LangDetectException

from knowref60k.extract.context import ExtractContext, ExtractStage
from knowref60k.extract.records import Sentence


class LanguageFilter(ExtractStage[Sentence, Sentence]):
    """Keeps sentences detected as `language`. langdetect is random unless seeded; the seed is config."""

    name = "language"
    unit = "sentences"

    def __init__(self, context: ExtractContext) -> None:
        super().__init__(context)
        self.language = context.config.language
        self.seed = context.config.language_seed

    def detect(self, text: str) -> str:
        return detected_language(text, self.seed)

    def reject(self, item: Sentence) -> str | None:
        return self.rejection(item.text)

    def rejection(self, text: str) -> str | None:
        detected = self.detect(text)
        return None if detected == self.language else f"language_{detected}"


# The evaluation runs the same sentences through several settings, and langdetect takes about 8 ms a
# sentence: the answer for a text and seed is always the same, so it is kept (a dump's sentences
# rarely repeat; the bound keeps a worker's memory flat).
@lru_cache(maxsize=1 << 16)
def detected_language(text: str, seed: int) -> str:
    DetectorFactory.seed = seed
    try:
        return str(detect(text))
    except LangDetectException:
        return "unknown"
