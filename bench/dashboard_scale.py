"""Benchmark: the dashboard of a large run (10,000 prompts x 100 iterations).

Budgets: the combined dashboard under 10 MB, drawn in a browser in
under 3 s. Steps, in one run:

1. land the run in a fresh lake. Generating 4,000,000 rollouts through the
   JSONL dumps would time the generator, not the dashboard, so DuckDB writes
   the lake's canonical parquet directly (same columns and types as
   ``obs ingest``): each prompt has a difficulty, a learning speed and 2-3
   instructions; success probability rises over the run; V_i, S_i and a
   reward case per rollout;
2. ``obs build`` (every model and data test);
3. ``obs render-dashboard``: seconds, file size;
4. open the file in Debian's Chromium (Playwright, every network request
   refused) and time navigation start -> the first tab's charts drawn (the
   page draws a tab's charts when it is first shown), then click every other
   tab and time click -> its charts drawn; three times, medians reported.

    python bench/dashboard_scale.py [--prompts 10000] [--iterations 100] [--samples 4]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import duckdb

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
CHROMIUM = "/usr/bin/chromium"
SIZE_BUDGET_MB = 10.0
DRAW_BUDGET_S = 3.0

INSTRUCTIONS = [
    "punctuation:no_comma",
    "change_case:english_lowercase",
    "detectable_format:json_format",
    "startend:end_checker",
    "keywords:existence",
    "length_constraints:number_words",
    "detectable_format:number_bullet_lists",
    "language:response_language",
]

LAKE_SQL = """
copy (
    with prompts as (
        select
            p,
            'Write a short piece about topic ' || p || '. Follow every instruction.' as prompt,
            (hash(p, 'difficulty') % 1000)::int / 1000.0 as difficulty,
            0.5 + (hash(p, 'speed') % 1000)::int / 500.0 as speed,
            (2 + hash(p, 'count') % 2)::bigint as num_instructions
        from range($prompts) as t(p)
    ),
    with_instructions as (
        select
            *,
            substr(sha256(prompt), 1, 16) as prompt_hash,
            list_transform(
                range(num_instructions),
                i -> $instructions[1 + (hash(p, i) % len($instructions))::int]
            ) as instruction_ids
        from prompts
    ),
    rollouts as (
        select
            with_instructions.*,
            it as iteration,
            s as sample_idx,
            -- success probability: a logistic in training progress, shifted by difficulty
            1 / (1 + exp(-8 * (it / $iterations * speed - difficulty)))
                as p_success,
            (hash(p, it, s) % 10000)::int / 10000.0 as u,
            (hash(p, it, s, 'soft') % 10000)::int / 10000.0 as soft
        from with_instructions, range($iterations) as i(it), range($samples) as j(s)
        where it between $first and $last
    ),
    scored as (
        select
            *,
            u < p_success as solved,
            list_transform(
                instruction_ids,
                (x, i) -> u < p_success or hash(p, iteration, sample_idx, i) % 2 = 0
            ) as instruction_followed
        from rollouts
    )
    select
        iteration,
        prompt_hash,
        sample_idx,
        cast(null as bigint) as data_idx,
        prompt,
        'response ' || sample_idx || ' to topic ' || p as response,
        round(0.7 * solved::int + 0.3 * soft, 4) as score,
        round(list_count(list_filter(instruction_followed, f -> f)) / len(instruction_ids), 4)
            as v_i,
        round(soft, 4) as s_i,
        0.5 as alpha_threshold,
        case
            when solved and soft >= 0.5 then 'full'
            when solved then 'verified_low_quality'
            when soft >= 0.5 then 'quality_only'
            else 'fail'
        end as reward_case,
        solved::double as prompt_strict_acc,
        list_count(list_filter(instruction_followed, f -> f)) / len(instruction_ids)
            as inst_strict_acc,
        num_instructions::bigint as num_instructions,
        list_count(list_filter(instruction_followed, f -> f))::bigint as num_followed,
        1.0 as format_score,
        instruction_ids,
        instruction_followed,
        '[]' as instruction_kwargs,
        cast(null as varchar) as ground_truth,
        cast(null as map(varchar, double)) as rewards,
        '{}' as extra,
        'bench://scale/' || iteration || '.jsonl' as source_file,
        (row_number() over (partition by iteration order by p, sample_idx))::bigint
            as source_line,
        length(response)::bigint as response_chars
    from scored
) to '$path' (format parquet, compression zstd)
"""


def _part(folder: Path, first: int) -> Path:
    """A part in the lake's layout: one ``ingested_at=`` folder per part (see obs.ingest.lake)."""
    stamp = f"20260101T{first // 3600 % 24:02d}{first // 60 % 60:02d}{first % 60:02d}000000Z"
    part = folder / f"ingested_at={stamp}" / "part.parquet"
    part.parent.mkdir(parents=True)
    return part


def land(lake: Path, prompts: int, iterations: int, samples: int) -> int:
    folder = lake / "rollouts" / "run_id=scale"
    folder.mkdir(parents=True)
    con = duckdb.connect()
    step = 10
    for first in range(0, iterations, step):
        last = min(first + step, iterations) - 1
        sql = (
            LAKE_SQL.replace("$prompts", str(prompts))
            .replace("$iterations", str(iterations))
            .replace("$samples", str(samples))
            .replace("$first", str(first))
            .replace("$last", str(last))
            .replace("$instructions", str(INSTRUCTIONS))
            .replace("$path", str(_part(folder, first)))
        )
        con.execute(sql)
    total = con.execute(f"select count(*) from read_parquet('{folder}/*/*.parquet')").fetchone()[0]
    con.close()
    return total


def timed(command: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-4000:])
        raise SystemExit(f"bench: failed: {' '.join(command)}")
    return time.perf_counter() - started


SECTION_DRAWN = """
(id) => {
    const plots = Array.from(document.querySelectorAll('#' + id + ' div.plot'));
    return plots.length > 0 && plots.every(
        el => el._fullLayout !== undefined && el.querySelector('svg.main-svg') !== null
    );
}
"""

CLICK_AND_TIME = """
async (index) => {
    const button = document.querySelectorAll('nav.tabs button')[index];
    const started = performance.now();
    button.click();
    await new Promise(resolve => requestAnimationFrame(() => setTimeout(resolve, 0)));
    return {id: button.dataset.target, started: started};
}
"""


def draw_seconds(page_path: Path, repeats: int = 3) -> dict[str, float | int]:
    """Median seconds: navigation start -> first tab drawn; each other tab's click -> drawn."""
    from playwright.sync_api import sync_playwright

    first, others, charts, errors = [], [], 0, []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        for _ in range(repeats):
            context = browser.new_context(viewport={"width": 1400, "height": 900})
            context.route(
                "**/*",
                lambda route: (
                    route.continue_() if route.request.url.startswith("file://") else route.abort()
                ),
            )
            page = context.new_page()
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(page_path.as_uri(), wait_until="commit")
            page.wait_for_function(SECTION_DRAWN, arg="section-0", polling=10, timeout=60_000)
            first.append(page.evaluate("performance.now()") / 1000)
            tabs = page.evaluate("document.querySelectorAll('nav.tabs button').length")
            slowest = 0.0
            for index in range(1, tabs):
                clicked = page.evaluate(CLICK_AND_TIME, index)
                page.wait_for_function(SECTION_DRAWN, arg=clicked["id"], polling=10)
                drawn = page.evaluate("performance.now()")
                slowest = max(slowest, (drawn - clicked["started"]) / 1000)
            others.append(slowest)
            charts = page.evaluate("document.querySelectorAll('.js-plotly-plot').length")
            context.close()
        browser.close()
    return {
        "first_tab_s": statistics.median(first),
        "slowest_other_tab_s": statistics.median(others),
        "charts": charts,
        "errors": len(errors),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--prompts", type=int, default=10_000)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--out", type=Path, default=HERE / "out" / "dashboard")
    parser.add_argument(
        "--reuse", action="store_true", help="Keep the lake and warehouse of the last run."
    )
    args = parser.parse_args()

    lake, warehouse = args.out / "lake", args.out / "obs.duckdb"
    base = [str(BIN / "obs"), "--lake", str(lake), "--warehouse", str(warehouse)]
    page = args.out / "dashboard.html"

    if args.reuse and warehouse.exists():
        rollouts = (
            duckdb.connect(str(warehouse), read_only=True)
            .execute("select sum(n_rollouts) from fct_iteration_summary")
            .fetchone()[0]
        )
        build_s = None  # not rebuilt: --reuse
    else:
        shutil.rmtree(args.out, ignore_errors=True)
        started = time.perf_counter()
        rollouts = land(lake, args.prompts, args.iterations, args.samples)
        land_s = time.perf_counter() - started
        print(f"landed {rollouts:,} rollouts in {land_s:.1f} s", flush=True)
        build_s = timed([*base, "build"])
        print(f"obs build: {build_s:.1f} s", flush=True)
    render_s = timed([*base, "render-dashboard", "--out", str(page)])
    size_mb = page.stat().st_size / 1e6
    drawn = draw_seconds(page)
    draw_s = drawn["first_tab_s"]

    results = {
        "prompts": args.prompts,
        "iterations": args.iterations,
        "rollouts": rollouts,
        "build_s": None if build_s is None else round(build_s, 2),
        "render_s": round(render_s, 2),
        "dashboard_mb": round(size_mb, 2),
        "size_budget_ratio": round(size_mb / SIZE_BUDGET_MB, 3),
        "draw_s": round(draw_s, 3),
        "draw_budget_ratio": round(draw_s / DRAW_BUDGET_S, 3),
        "slowest_other_tab_s": round(drawn["slowest_other_tab_s"], 3),
        "charts_drawn": drawn["charts"],
        "page_errors": drawn["errors"],
    }
    print(
        f"render {render_s:.1f} s; dashboard {size_mb:.2f} MB "
        f"({results['size_budget_ratio']:.2f} of the 10 MB budget); "
        f"first tab drawn {draw_s:.2f} s after navigation start "
        f"({results['draw_budget_ratio']:.2f} of the 3 s budget); slowest other tab "
        f"{drawn['slowest_other_tab_s']:.2f} s after its click; "
        f"{drawn['charts']} charts drawn; page errors {drawn['errors']}"
    )
    (args.out / "results.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
