"""Language filter: seeded langdetect on the few sentences that survive every other filter."""

from __future__ import annotations

from langdetect import DetectorFactory, detect
from langdetect.lang_detect_exception import LangDetectException

from knowref60k.core.stage import Stage
from knowref60k.extract.context import ExtractContext
from knowref60k.extract.records import Sentence


class LanguageFilter(Stage[Sentence, Sentence]):
    """Keeps sentences detected as `language`. langdetect is random unless seeded; the seed is config."""

    name = "language"
    unit = "sentences"

    def __init__(self, context: ExtractContext) -> None:
        super().__init__()
        self.language = context.config.language
        self.seed = context.config.language_seed

    def detect(self, text: str) -> str:
        DetectorFactory.seed = self.seed
        try:
            return str(detect(text))
        except LangDetectException:
            return "unknown"

    def reject(self, item: Sentence) -> str | None:
        return self.rejection(item.text)

    def rejection(self, text: str) -> str | None:
        detected = self.detect(text)
        return None if detected == self.language else f"language_{detected}"
