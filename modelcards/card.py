"""The Arena's results in a model card's metadata (`model-index`), the text that carries
them (the pull request's), and the card's opt-out.

Pure: card text and `CardResults` in, card text out. The results are huggingface_hub's
own `EvalResult`s, and `ModelCard` writes them as `model-index` (through
`eval_results_to_model_index`), so the Hub's evaluation widget and every client read
them. One `model-index` entry per track: PvP, and each PvE stage played, each naming the
history dataset as its source:

```yaml
model-index:
- name: my-team
  results:
  - task: {type: reinforcement-learning, name: Neural MMO team play}
    dataset: {name: NMMO Arena PvP, type: nmmo-arena/match-history, config: pvp, split: train}
    metrics:
    - {type: trueskill_conservative, value: 21.4, name: TrueSkill (mu - 3 sigma)}
    - ...
    source: {name: nmmo-arena/match-history, url: https://huggingface.co/datasets/nmmo-arena/match-history}
```

PvP entries appear only once the revision's PvP rating is settled (`CardResults.pvp`,
`modelcards.publications`); before that the text says the rating is provisional, how many
PvP matches it has played and about how many more it needs (`description`).

Results of other sources on the card (the owner's own evaluations) are kept as they are;
the Arena's, recognised by their dataset (the history repo), are replaced.

The same pull request also writes the Hub's newer results format, a file in the model repo
(`EVAL_RESULTS_PATH`, huggingface_hub's `EvalResultEntry`s): one headline figure per task of
the history dataset's benchmark declaration (its `eval.yaml`: `pvp`, `pve-stage-1` to `-3`),
so the results appear on the model page and on the dataset's leaderboard.

A card opts out with `nmmo_arena: {model_index: false}` in its metadata (of both).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import yaml
from huggingface_hub import EvalResult, EvalResultEntry, ModelCard, ModelCardData, eval_result_entries_to_yaml

from arena.errors import CardMetadataError
from arena.settling import SETTLED_WIDTH
from modelcards.publications import CardResults

#: The card metadata key the Arena reads (`nmmo_arena: {model_index: false}` opts out).
ARENA_KEY = "nmmo_arena"
OPT_OUT_KEY = "model_index"

#: The model repo's file of the Arena's results in the Hub's `.eval_results/` format.
EVAL_RESULTS_PATH = ".eval_results/nmmo-arena.yaml"

TASK_TYPE = "reinforcement-learning"
TASK_NAME = "Neural MMO team play"


def opted_out(card_data: Mapping[str, Any] | None) -> bool:
    """Whether a card's metadata declines the Arena's results (`nmmo_arena: {model_index: false}`)."""
    section = (card_data or {}).get(ARENA_KEY)
    if not isinstance(section, Mapping) or OPT_OUT_KEY not in section:
        return False
    value = section[OPT_OUT_KEY]
    return value is False or str(value).strip().lower() in ("false", "no", "off", "0")


def eval_results(results: CardResults, *, dataset: str, dataset_url: str) -> list[EvalResult]:
    """The figures as `EvalResult`s: PvP ratings (once settled), then each PvE stage.

    Args:
        results (`CardResults`): what to publish.
        dataset (`str`): the history dataset's repo id (`dataset.type` and `source.name`).
        dataset_url (`str`): its page on the Hub the Space uses (`source.url`).
    """
    def result(track: str, config: str, metric: str, value: Any, name: str) -> EvalResult:
        return EvalResult(
            task_type=TASK_TYPE, task_name=TASK_NAME, dataset_type=dataset, dataset_name=f"NMMO Arena {track}",
            dataset_config=config, dataset_split="train", metric_type=metric, metric_value=value, metric_name=name,
            source_name=dataset, source_url=dataset_url,
        )

    out = []
    pvp = results.pvp
    if pvp is not None:
        out += [
            result("PvP", "pvp", "trueskill_conservative", pvp.conservative, "TrueSkill (mu - 3 sigma)"),
            result("PvP", "pvp", "trueskill_mu", pvp.mu, "TrueSkill mu"),
            result("PvP", "pvp", "trueskill_sigma", pvp.sigma, "TrueSkill sigma"),
        ]
        if pvp.mle is not None:
            out += [
                result("PvP", "pvp", "mle_rating", pvp.mle, "MLE rating (Plackett-Luce, anchored)"),
                result("PvP", "pvp", "mle_rating_low", pvp.mle_low, "MLE rating, 95% interval low"),
                result("PvP", "pvp", "mle_rating_high", pvp.mle_high, "MLE rating, 95% interval high"),
            ]
        out.append(result("PvP", "pvp", "matches", pvp.matches, "PvP matches"))
    for stage in results.pve:
        track, config = f"PvE stage {stage.stage}", f"pve-stage-{stage.stage}"
        out += [
            result(track, config, "top1_ratio", stage.top1_ratio, "Top1Ratio"),
            result(track, config, "mean_achievement", stage.mean_achievement, "Mean Achievement"),
            result(track, config, "matches", stage.matches, "PvE matches"),
        ]
    return out


def eval_result_entries(results: CardResults, *, dataset: str, source_url: str) -> list[EvalResultEntry]:
    """The headline figure of each task the revision has one for, in the Hub's `.eval_results/`
    format: `pvp` (the conservative TrueSkill rating, once settled) and `pve-stage-N` (Top1Ratio).

    Args:
        results (`CardResults`): what to publish.
        dataset (`str`): the history dataset's repo id (the benchmark: its `eval.yaml`).
        source_url (`str`): where the figures can be checked (the revision's page on the Arena).
    """
    sha7 = results.id.sha[:7]

    def entry(task: str, value: Any, notes: str) -> EvalResultEntry:
        return EvalResultEntry(dataset_id=dataset, task_id=task, value=value, source_url=source_url,
                               source_name="NMMO Arena", notes=f"revision {sha7}; {notes}")

    out = []
    pvp = results.pvp
    if pvp is not None:
        out.append(entry("pvp", pvp.conservative, f"{pvp.matches} PvP matches, TrueSkill mu {pvp.mu:.2f}, sigma {pvp.sigma:.2f}"))
    for stage in results.pve:
        out.append(entry(f"pve-stage-{stage.stage}", stage.top1_ratio,
                         f"{stage.matches} matches against stage {stage.stage}'s built-in teams, "
                         f"mean Achievement {stage.mean_achievement:.1f}"))
    return out


def eval_results_file(entries: list[EvalResultEntry]) -> str:
    """The text of `EVAL_RESULTS_PATH` ("" for no entry: then no file is written)."""
    if not entries:
        return ""
    return yaml.safe_dump(eval_result_entries_to_yaml(entries), sort_keys=False, allow_unicode=True)


def with_results(card_text: str, results: list[EvalResult], *, dataset: str, model_name: str) -> str:
    """The card with the Arena's results replaced by `results`, everything else kept.

    Raises:
        `CardMetadataError`: the card's metadata cannot be read (broken YAML or
            `model-index`); the owner has to fix it first.
    """
    try:
        card = ModelCard(card_text or "")
    except (ValueError, yaml.YAMLError) as exc:
        raise CardMetadataError(
            f"The model card's metadata cannot be read ({type(exc).__name__}: {exc}). "
            "Fix the YAML between the card's '---' lines (e.g. check it with `python -c \"import huggingface_hub; "
            "huggingface_hub.ModelCard.load('README.md')\"`), then push it."
        ) from exc
    data = cast(ModelCardData, card.data)  # a ModelCard's data is always a ModelCardData
    kept = [r for r in (data.eval_results or []) if r.dataset_type != dataset]
    data.model_name = data.model_name or model_name
    data.eval_results = kept + list(results)
    return str(card)


def arena_results(card_text: str, *, dataset: str) -> list[EvalResult]:
    """The Arena's results on a card (those whose dataset is the history repo)."""
    card = ModelCard(card_text or "", ignore_metadata_errors=True)
    return [r for r in (cast(ModelCardData, card.data).eval_results or []) if r.dataset_type == dataset]


def provisional_text(results: CardResults) -> str:
    """What the text says of a PvP rating not settled yet ("" once it is, or without a note).

    Example:
        >>> from arena.revision import Revision
        >>> from modelcards.publications import ProvisionalPvP
        >>> provisional_text(CardResults(Revision("ann/team", "a" * 40), (), provisional=ProvisionalPvP(5, 18)))
        'PvP rating: provisional after 5 PvP matches (about 18 more needed); published here once settled.'
    """
    note = results.provisional
    if results.pvp is not None or note is None:
        return ""
    more = f" (about {note.matches_left} more needed)" if note.matches_left else ""
    return f"PvP rating: provisional after {note.matches} PvP matches{more}; published here once settled."


def description(results: CardResults, reason: str, *, dataset: str, dataset_url: str) -> str:
    """The pull request's text (its description, each commit's, and the update comment):
    the figures, a provisional PvP rating said as such, their source, and how to opt out.

    Args:
        results (`CardResults`): what is published.
        reason (`str`): why now (`Publication.reason`).
        dataset (`str`): the history dataset's repo id.
        dataset_url (`str`): its page on the Hub the Space uses.
    """
    lines = [
        f"The [NMMO Arena]({dataset_url}) evaluated revision `{results.id.short}` of this policy ({reason}). "
        "This pull request adds its results to the card's `model-index` metadata, so that the Hub shows them on "
        "this page. The Arena updates this same pull request when a PvE stage ends, when the PvP rating is settled, "
        "and rarely after that (never after every match).",
        "",
        "| Track | Figure | Value |",
        "|---|---|---|",
    ]
    if results.pvp is not None:
        p = results.pvp
        lines += [f"| PvP | TrueSkill mu - 3 sigma | {p.conservative:.2f} (mu {p.mu:.2f}, sigma {p.sigma:.2f}) |",
                  f"| PvP | matches | {p.matches} |"]
        if p.mle is not None:
            lines.append(f"| PvP | MLE rating (95% interval) | {p.mle:.2f} ({p.mle_low:.2f} to {p.mle_high:.2f}) |")
    elif results.provisional is not None:
        note = results.provisional
        more = f", about {note.matches_left} more needed" if note.matches_left else ""
        lines.append(f"| PvP | rating | provisional ({note.matches} PvP matches{more}) |")
    for s in results.pve:
        lines.append(f"| PvE stage {s.stage} | Top1Ratio / mean Achievement | {s.top1_ratio:.2f} / {s.mean_achievement:.1f} "
                     f"({s.matches} matches) |")
    if (note_text := provisional_text(results)):
        lines += ["", f"{note_text} Settled means its 95% interval is at most {SETTLED_WIDTH:g} rating unit wide "
                      "(the Arena's rules, \"Settled\"); until then its PvP figures move too much to be worth a "
                      "place on the card."]
    lines += [
        "",
        f"Source: every match is in the history dataset [{dataset}]({dataset_url}).",
        "",
        "Not wanted? Close this pull request (the Arena then leaves this revision alone), or add "
        "`nmmo_arena: {model_index: false}` to the card's metadata (a revision whose card says so is never published).",
    ]
    return "\n".join(lines)
