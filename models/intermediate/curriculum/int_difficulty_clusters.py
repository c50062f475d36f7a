"""Adaptive difficulty: seeded k-means on standardised prompt features.

One row per run, iteration and prompt. Within each (run, iteration), prompts
are clustered on standardised mean_at_5, pass_rate and std_score with k-means
(k = var kmeans_clusters, default 4; k-means++ starts drawn from a generator
seeded with var kmeans_seed, then Lloyd iterations to convergence), and the
clusters are named by their centroid's mean_at_5, lowest first: hard,
medium-hard, medium-easy, easy. The same input always gives the same buckets.
SQL has no k-means, so this is the project's one Python model.
"""

import numpy as np
import pandas as pd

NAMES = ["hard", "medium-hard", "medium-easy", "easy"]
FEATURES = ["mean_at_5", "pass_rate", "std_score"]


def _kmeans(points, k, seed, iterations=100):
    rng = np.random.default_rng(seed)
    centroids = [points[rng.integers(len(points))]]
    for _ in range(1, k):
        distance = np.min(
            ((points[:, None, :] - np.array(centroids)[None, :, :]) ** 2).sum(axis=2), axis=1
        )
        total = distance.sum()
        if total == 0:
            break
        centroids.append(points[rng.choice(len(points), p=distance / total)])
    centroids = np.array(centroids)
    labels = np.zeros(len(points), dtype=int)
    for _ in range(iterations):
        distance = ((points[:, None, :] - centroids[None, :, :]) ** 2).sum(axis=2)
        new_labels = distance.argmin(axis=1)
        moved = np.array(
            [
                points[new_labels == c].mean(axis=0) if (new_labels == c).any() else centroids[c]
                for c in range(len(centroids))
            ]
        )
        if np.array_equal(new_labels, labels) and np.allclose(moved, centroids):
            break
        labels, centroids = new_labels, moved
    return labels


def _cluster(group, k, seed):
    values = group[FEATURES].astype(float).fillna(0.0).to_numpy()
    spread = values.std(axis=0)
    spread[spread == 0] = 1.0
    standardised = (values - values.mean(axis=0)) / spread
    distinct = len(np.unique(standardised, axis=0))
    clusters = min(k, distinct)
    labels = _kmeans(standardised, clusters, seed) if clusters > 1 else np.zeros(len(group), int)
    centre = pd.Series(group["mean_at_5"].to_numpy()).groupby(labels).mean().sort_values()
    # Name clusters by centroid mean_at_5; with fewer than four clusters the
    # names spread over the scale (two clusters are hard and easy).
    slots = np.round(np.linspace(0, len(NAMES) - 1, len(centre))).astype(int)
    naming = {label: NAMES[slot] for label, slot in zip(centre.index, slots)}
    out = group[["run_id", "iteration", "prompt_hash"]].copy()
    out["bucket"] = [naming[label] for label in labels]
    out["cluster_mean_at_5"] = [centre[label] for label in labels]
    return out


def model(dbt, session):
    dbt.config(materialized="table")
    k = int(dbt.config.get("kmeans_clusters") or 4)
    seed = int(dbt.config.get("kmeans_seed") or 42)
    prompts = dbt.ref("fct_prompt_iteration").df()
    columns = ["run_id", "iteration", "prompt_hash", "bucket", "cluster_mean_at_5"]
    if prompts.empty:
        return pd.DataFrame(columns=columns)
    prompts = prompts.sort_values(["run_id", "iteration", "prompt_hash"])
    parts = [
        _cluster(group, k, seed)
        for _, group in prompts.groupby(["run_id", "iteration"], sort=True)
    ]
    return pd.concat(parts, ignore_index=True)[columns]
