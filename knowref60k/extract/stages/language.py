"""Language filter: seeded langdetect on the few sentences that survive every other filter."""

from __future__ import annotations

from langdetect import DetectorFactory, detect
from langdetect.lang_detect_exception import LangDetectException

from knowref60k.core.stats import StageStats


class LanguageFilter:
    """Keeps sentences detected as `language`. langdetect is random unless seeded; the seed is config."""

    def __init__(self, language: str, seed: int) -> None:
        self.language = language
        self.seed = seed
        self.stats = StageStats()

    def detect(self, text: str) -> str:
        DetectorFactory.seed = self.seed
        try:
            return str(detect(text))
        except LangDetectException:
            return "unknown"

    def keep(self, text: str) -> bool:
        self.stats.total += 1
        detected = self.detect(text)
        if detected != self.language:
            self.stats.drop(f"language_{detected}")
            return False
        self.stats.forwarded += 1
        return True
