"""Adaptive difficulty: seeded k-means on standardised prompt features.

One row per run, iteration and prompt. Within each (run, iteration), prompts
are clustered on standardised mean_at_5, pass_rate and std_score with k-means
(k = var kmeans_clusters, default 4; k-means++ starts drawn from a generator
seeded with var kmeans_seed, then Lloyd iterations to convergence), and the
clusters are named by their centroid's mean_at_5, lowest first: hard,
medium-hard, medium-easy, easy. The same input always gives the same buckets.
SQL has no k-means, so this is the project's one Python model.

Incremental by (run, iteration), like the SQL marts: a build clusters only
the iterations of int_prompt_iteration that changed since the last build.
Plain numpy (no pandas): the model runs on every build.
"""

import math

import numpy as np
import pyarrow as pa

NAMES = ["hard", "medium-hard", "medium-easy", "easy"]
FEATURES = ["mean_at_5", "pass_rate", "std_score"]
SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("iteration", pa.int64()),
        ("prompt_hash", pa.string()),
        ("bucket", pa.string()),
        ("cluster_mean_at_5", pa.float64()),
        ("ingested_through", pa.timestamp("us")),
    ]
)


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


def _mean_skipping_nan(values):
    kept = values[~np.isnan(values)]
    return math.fsum(kept) / len(kept) if len(kept) else np.nan


def _cluster(values, mean_at_5, k, seed):
    """Bucket names and cluster mean_at_5 for one (run, iteration) group.

    ``values`` holds the features (nulls as NaN), one row per prompt in
    prompt_hash order; ``mean_at_5`` the raw column (nulls as NaN).
    """
    values = np.where(np.isnan(values), 0.0, values)
    spread = values.std(axis=0)
    spread[spread == 0] = 1.0
    standardised = (values - values.mean(axis=0)) / spread
    distinct = len(np.unique(standardised, axis=0))
    clusters = min(k, distinct)
    labels = _kmeans(standardised, clusters, seed) if clusters > 1 else np.zeros(len(values), int)
    present = np.unique(labels)
    means = np.array([_mean_skipping_nan(mean_at_5[labels == label]) for label in present])
    order = np.argsort(means, kind="stable")  # NaN last, ties by label
    # Name clusters by centroid mean_at_5; with fewer than four clusters the
    # names spread over the scale (two clusters are hard and easy).
    slots = np.round(np.linspace(0, len(NAMES) - 1, len(present))).astype(int)
    naming = {int(present[i]): NAMES[slot] for i, slot in zip(order, slots)}
    centre = {int(label): mean for label, mean in zip(present, means)}
    return [naming[int(label)] for label in labels], [centre[int(label)] for label in labels]


def _changed_filter(dbt, session, prompts, lookback_seconds):
    """SQL condition on (run_id, iteration) for the groups to recompute, or None for all."""
    if not dbt.is_incremental:
        return None
    given = getattr(dbt, "obs_changed_groups", None)
    if given is not None:
        # obs's executor looked the changed groups up by its exact rule (the
        # one it fills changed_groups with in the SQL models).
        return given
    built = dict(
        session.sql(
            f"select run_id, max(ingested_through) from {dbt.this!r} group by 1"
        ).fetchall()
    )
    groups = prompts.aggregate(
        "run_id, iteration, max(ingested_through) as through", "run_id, iteration"
    ).fetchall()
    lookback = np.timedelta64(int(lookback_seconds * 1e6), "us")
    changed = [
        (run, iteration)
        for run, iteration, through in groups
        if built.get(run) is None
        or np.datetime64(through, "us") > np.datetime64(built[run], "us") - lookback
    ]
    if not changed:
        return "false"
    quoted = ", ".join(
        "(" + "'" + run.replace("'", "''") + "', " + str(int(iteration)) + ")"
        for run, iteration in changed
    )
    return f"(run_id, iteration) in ({quoted})"


def model(dbt, session):
    dbt.config(
        materialized="incremental",
        unique_key=["run_id", "iteration"],
    )
    # The vars come through the model's config (its yml entry). dbt passes a
    # key only when it finds `dbt.config.get("<key>")` as a whole call in the
    # code: a call inside another expression (`dbt.config.get(...) or 4`) is
    # not found, so such a key would never reach the model. No defaults here:
    # the yml always passes the var.
    k = int(dbt.config.get("kmeans_clusters"))
    seed = int(dbt.config.get("kmeans_seed"))
    lookback = float(dbt.config.get("incremental_lookback_seconds"))
    prompts = dbt.ref("int_prompt_iteration")
    condition = _changed_filter(dbt, session, prompts, lookback)
    selected = prompts if condition is None else prompts.filter(condition)
    columns = selected.project(
        "run_id, iteration, prompt_hash, ingested_through, "
        + ", ".join(f"cast({name} as double) as {name}" for name in FEATURES)
    ).order("run_id, iteration, prompt_hash")
    data = {
        name: np.ma.filled(array, np.nan) if name in FEATURES else np.ma.getdata(array)
        for name, array in columns.fetchnumpy().items()
    }
    rows = len(data["prompt_hash"])
    buckets, centres = [], []
    start = 0
    while start < rows:
        end = start + 1
        while (
            end < rows
            and data["run_id"][end] == data["run_id"][start]
            and data["iteration"][end] == data["iteration"][start]
        ):
            end += 1
        values = np.column_stack([data[name][start:end] for name in FEATURES]).astype(float)
        names, means = _cluster(values, data["mean_at_5"][start:end].astype(float), k, seed)
        buckets.extend(names)
        centres.extend(means)
        start = end
    return pa.table(
        [
            pa.array(list(data["run_id"]), pa.string()),
            pa.array(data["iteration"], pa.int64()),
            pa.array(list(data["prompt_hash"]), pa.string()),
            pa.array(buckets, pa.string()),
            pa.array(centres, pa.float64()),
            pa.array(data["ingested_through"]).cast(pa.timestamp("us")),
        ],
        schema=SCHEMA,
    )
