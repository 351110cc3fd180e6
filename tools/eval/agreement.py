"""Agreement between two independent judges on the gold set's double-judged sample (README.md beside
this file): Cohen's kappa on the label, on each criterion, on the reason, and how often the names match.

    .venv/bin/python tools/eval/agreement.py [data/eval/second_judgements.jsonl]

Each line of the file is one sampled item: `candidate_id`, the `first` judge's verdict, the `second`
judge's (given the sentence and the criteria only, blind to the first), and the `settled` verdict: the
two judges' when they agree on label, reason and names, else a third judge's, who saw both. Every verdict
keeps its reason and note.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import orjson
from sklearn.metrics import cohen_kappa_score

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "eval" / "second_judgements.jsonl"
# The criterion an invalid item fails first, by its reason (data/eval/README.md, "Criteria").
CRITERION_OF = {
    "not_a_sentence": "4. a sentence",
    "same_person": "2. different people",
    "pronoun_refers_to_neither": "3. the pronoun refers to one of them",
}
TWO_NAMED_PEOPLE = "1. two named people"
CRITERIA = (TWO_NAMED_PEOPLE, *CRITERION_OF.values())


def failed_criterion(verdict: dict[str, Any]) -> str | None:
    if verdict["label"] == "valid":
        return None
    return CRITERION_OF.get(verdict["reason"], TWO_NAMED_PEOPLE)


def names(verdict: dict[str, Any]) -> tuple[str, str] | None:
    return (verdict["antecedent1"], verdict["antecedent2"]) if verdict["label"] == "valid" else None


def agreement(pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, Any]:
    """Kappa and raw agreement on the label, each criterion (fails it or not) and the reason; the names of
    the items both judges call valid."""

    def kappa(first: list[Any], second: list[Any]) -> dict[str, Any]:
        same = sum(a == b for a, b in zip(first, second, strict=True))
        return {"kappa": round(float(cohen_kappa_score(first, second)), 3), "agree": same, "of": len(first)}

    firsts, seconds = [a for a, _ in pairs], [b for _, b in pairs]
    both_valid = [(a, b) for a, b in pairs if a["label"] == b["label"] == "valid"]
    return {
        "items": len(pairs),
        "label": kappa([v["label"] for v in firsts], [v["label"] for v in seconds]),
        "criteria": {
            criterion: kappa(
                [failed_criterion(v) == criterion for v in firsts],
                [failed_criterion(v) == criterion for v in seconds],
            )
            for criterion in CRITERIA
        },
        "reason": kappa([v["reason"] or "valid" for v in firsts], [v["reason"] or "valid" for v in seconds]),
        "names_of_items_both_call_valid": {
            "agree": sum(names(a) == names(b) for a, b in both_valid),
            "of": len(both_valid),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sample", nargs="?", type=Path, default=SAMPLE)
    args = parser.parse_args()
    records = [orjson.loads(line) for line in args.sample.read_bytes().splitlines()]
    result = agreement([(r["first"], r["second"]) for r in records])
    result["settled_by_a_third_judge"] = sum(r["settled_by"] == "third judge" for r in records)
    print(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode())


if __name__ == "__main__":
    main()
