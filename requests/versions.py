"""Kafka's version ranges ("N", "A-B", "A+", "none"), as in the generator's Versions.java.

Rules: a range is closed; "A+" means A up to the highest int16; "none" is empty.
"""

from __future__ import annotations

import attrs

HIGHEST = 0x7FFF  # "A+" reaches Short.MAX_VALUE: a version is an int16 on the wire (Versions.java)


@attrs.frozen
class Versions:
    lowest: int
    highest: int

    @classmethod
    def parse(cls, text: str | None, default: Versions | None = None) -> Versions:
        """Parse a version range; None gives `default` (or NONE)."""
        if text is None:
            return default if default is not None else NONE
        text = text.strip()
        if text == "none":
            return NONE
        try:
            if text.endswith("+"):
                return cls(int(text[:-1]), HIGHEST)
            if "-" in text:
                lo, hi = text.split("-", 1)
                r = cls(int(lo), int(hi))
                if r.lowest > r.highest:
                    raise ValueError
                return r
            v = int(text)
            return cls(v, v)
        except ValueError:
            raise ValueError(f"Invalid version range {text!r}") from None

    @property
    def empty(self) -> bool:
        return self.lowest > self.highest

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.lowest <= version <= self.highest

    def intersect(self, other: Versions) -> Versions:
        lo, hi = max(self.lowest, other.lowest), min(self.highest, other.highest)
        return Versions(lo, hi) if lo <= hi else NONE

    def is_subset_of(self, other: Versions) -> bool:
        return self.empty or (other.lowest <= self.lowest and self.highest <= other.highest)

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.highest == HIGHEST:
            return f"{self.lowest}+"
        if self.lowest == self.highest:
            return str(self.lowest)
        return f"{self.lowest}-{self.highest}"


NONE = Versions(1, 0)
ALL = Versions(0, HIGHEST)
