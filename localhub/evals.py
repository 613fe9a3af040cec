"""The Hub's evaluation results, as the embedded Hub serves them.

Two reads of the Hub's results format (https://huggingface.co/docs/hub/eval-results), so that
what the Arena writes is tested through huggingface_hub's own client:

- a model's results (`model_info(expand=["evalResults"])`): the entries of the revision's
  `.eval_results/*.yaml` files, each as `{"filename", "data"}`, or `{"filename", "error"}`
  for a file that is not a list of entries (huggingface_hub skips those, with a warning);
- a benchmark's leaderboard (`get_dataset_leaderboard`): for a dataset that declares itself a
  benchmark (an `eval.yaml` at its root), every model repo's entries for it, from main and
  from open pull requests (with their number), one per model, highest value first. The
  task is the declaration's first unless `task_id` is asked for.

What the real Hub does beyond this (an allow-list of benchmarks, verified tokens, the
`base_model` filter) is left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from localhub.store import PR_REF_PREFIX, Commit, HubStore, Repo

#: Where a model repo keeps its results.
FOLDER = ".eval_results/"


def entries(store: HubStore, commit: Commit) -> list[dict[str, Any]]:
    """The evaluation results of a commit, as the Hub's API lists them."""
    out: list[dict[str, Any]] = []
    for path, entry in sorted(commit.files.items()):
        if not (path.startswith(FOLDER) and path.endswith((".yaml", ".yml"))):
            continue
        try:
            data = yaml.safe_load(store.blob_path(entry["oid"]).read_bytes())
        except yaml.YAMLError as exc:
            out.append({"filename": path, "error": f"not YAML: {exc}"})
            continue
        if not isinstance(data, list) or not all(_is_entry(item) for item in data):
            out.append({"filename": path, "error": "expected a list of entries, each with dataset.id, dataset.task_id and value"})
            continue
        out += [{"filename": path, "data": item} for item in data]
    return out


def _is_entry(item: Any) -> bool:
    dataset = item.get("dataset") if isinstance(item, Mapping) else None
    return isinstance(dataset, Mapping) and bool(dataset.get("id")) and bool(dataset.get("task_id")) and "value" in item


def leaderboard(store: HubStore, dataset: Repo, *, task_id: str | None = None) -> list[dict[str, Any]] | None:
    """The benchmark's leaderboard; None if the dataset declares no benchmark (`eval.yaml`)."""
    declaration = store.commit(dataset).files.get("eval.yaml")
    if declaration is None:
        return None
    tasks = (yaml.safe_load(store.blob_path(declaration["oid"]).read_bytes()) or {}).get("tasks") or []
    task = task_id or (tasks[0].get("id") if tasks else None)
    best: dict[str, dict[str, Any]] = {}
    for repo in store.repos("model"):
        for ref, sha in sorted(store.refs(repo).items()):
            pull = int(ref[len(PR_REF_PREFIX):]) if ref.startswith(PR_REF_PREFIX) else None
            if pull is None and ref != "main":
                continue
            if pull is not None and store.discussion(repo, pull).status != "open":
                continue
            for item in entries(store, store.commit(repo, sha)):
                data = item.get("data") or {}
                if data.get("dataset", {}).get("id") != dataset.repo_id or data["dataset"].get("task_id") != task:
                    continue
                row = {"modelId": repo.repo_id, "value": data["value"], "filename": item["filename"],
                       "verified": False, "source": data.get("source"), "notes": data.get("notes"),
                       "pullRequest": pull, "taskId": task,
                       "author": {"type": "user", "name": repo.repo_id.split("/")[0]}}
                if repo.repo_id not in best or best[repo.repo_id]["pullRequest"] is not None:  # main first
                    best[repo.repo_id] = row
    ranked = sorted(best.values(), key=lambda r: -float(r["value"]))
    return [{"rank": rank, **row} for rank, row in enumerate(ranked, start=1)]
