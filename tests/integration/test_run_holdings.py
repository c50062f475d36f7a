"""One notion of a run: every reporting command takes any run the warehouse has.

The runs go through the real `obs ingest` and one `obs build`:
- trl: TRL's trainer_state.json (written by transformers) and its completions
  parquet (two reward functions): rollouts, a tracker history and reward data;
- verl: verl dumps and their validation dumps: the runs verl and verl:val,
  rollouts only;
- tbx_run: a tracker log of loss and reward only (a tracker history and reward data);
- cfg-a, cfg-b, cfg-c: W&B exports with a config only (a tracker history only);
- alpha, zeta: dumps of the same two prompts (alpha learns one that zeta never
  does; zeta forgets the other).
- ifeval: IFEval dumps whose rollouts carry their own prompt_strict_acc, and
  V_i, S_i and format_score, whose sum is not the dump's score.
A run lacking what a command covers gets one line saying what it holds and
what would land the rest; an unknown run one line naming every run.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import Result

from tests.conftest import run_cli
from tests.data.run_writers import toy_verl_run

pytestmark = pytest.mark.integration

RUNS = "alpha, cfg-a, cfg-b, cfg-c, ifeval, tbx_run, trl, verl, verl:val, zeta"
PROMPTS_FOR = "land rollout dumps (obs ingest rollouts PATH --run {run}) to see prompts"
TBX = "tbx_run: tracker history and reward data; " + PROMPTS_FOR.format(run="tbx_run")
CFG = "cfg-a, cfg-b, cfg-c: tracker history only; " + PROMPTS_FOR.format(run="RUN")


@dataclass
class Built:
    root: Path
    lake: Path
    warehouse: Path

    def invoke(self, args: list[object], exit_code: int = 0) -> Result:
        return run_cli(["--lake", self.lake, "--warehouse", self.warehouse, *args], exit_code)


def _trl(root: Path) -> Path:
    """A TRL output folder: trainer_state.json and four completions files."""
    from transformers.trainer_callback import TrainerState

    folder = root / "trl"
    log = [
        {"loss": 0.1 / step, "reward": -0.3 + step / 100, "reward_std": 0.5, "step": step}
        for step in range(1, 5)
    ]
    folder.mkdir()
    TrainerState(global_step=4, max_steps=4, log_history=log).save_to_json(
        str(folder / "trainer_state.json")
    )
    (folder / "completions").mkdir()
    for step in range(1, 5):
        table = {
            "step": [step] * 4,
            "prompt": ["p0", "p0", "p1", "p1"],
            "completion": ["a", "b", "c", "d"],
            "reward_len": [-0.5, -0.25, -0.75, -1.0],
            "reward_fmt": [1.0, 0.0, 0.0, 1.0],
        }
        pq.write_table(pa.table(table), folder / "completions" / f"completions_{step:05d}.parquet")
    return folder


def _dumps(folder: Path, scores: dict[int, dict[str, list[float]]]) -> Path:
    folder.mkdir(parents=True)
    for iteration, by_prompt in scores.items():
        rows = [
            json.dumps({"input": prompt, "output": f"r{i}", "score": score}) + "\n"
            for prompt, values in by_prompt.items()
            for i, score in enumerate(values)
        ]
        (folder / f"{iteration}.jsonl").write_text("".join(rows))
    return folder


def _ifeval(folder: Path) -> Path:
    """Two iterations of one prompt, two rollouts each: V_i + S_i + format_score (the
    reward functions) is not the score; at iteration 1 they average 2.3 against 0.6."""
    folder.mkdir()
    rollouts = {
        0: [(0.2, 0.5, 0.3, 0), (0.6, 1.0, 0.4, 1)],
        1: [(0.8, 1.0, 0.6, 1), (0.4, 0.5, 0.5, 0)],
    }  # (score, V_i, S_i, prompt_strict_acc); format_score 1 throughout
    for iteration, rows in rollouts.items():
        lines = [
            json.dumps({"input": "Write a haiku.", "output": f"r{i}", "score": score,
                        "V_i": v, "S_i": s, "format_score": 1.0, "prompt_strict_acc": solved})
            for i, (score, v, s, solved) in enumerate(rows)
        ]  # fmt: skip
        (folder / f"{iteration}.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def _export(root: Path, run: str, config_text: str) -> Path:
    """A W&B export (the analyze-experiment workflow's JSON) with ``config_text`` as config."""
    path = root / "exports" / f"{run}.json"
    path.parent.mkdir(exist_ok=True)
    history = json.dumps([{"_step": s, "loss": 1.0 / (s + 1)} for s in range(3)])
    path.write_text(f'{{"id": "{run}", "config": {config_text}, "history": {history}}}')
    return path


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    root = tmp_path_factory.mktemp("run_holdings")
    state = Built(root, root / "lake", root / "warehouse" / "obs.duckdb")
    trl = _trl(root)
    state.invoke(["ingest", "metrics", trl / "trainer_state.json", "--run", "trl", "-q"])
    state.invoke(["ingest", "rollouts", trl / "completions", "--run", "trl", "-q"])
    verl = toy_verl_run(root / "verl")
    for step in (1, 2):
        val = [json.dumps({"input": f"v{i}", "output": "a", "score": i % 2}) for i in range(4)]
        (verl / f"val_{step}.jsonl").write_text("\n".join(val) + "\n")
    state.invoke(["ingest", "rollouts", verl, "--run", "verl", "-q"])
    log = root / "tbx_run.jsonl"
    log.write_text("".join(json.dumps({"step": s, "loss": 1 / (s + 1), "reward": s / 10}) + "\n"
                           for s in range(6)))  # fmt: skip
    state.invoke(["ingest", "metrics", log, "--run", "tbx_run", "-q"])
    lr = "actor_rollout_ref.actor.optim.lr"
    for run, config in (
        ("cfg-a", f'{{"{lr}": 1e-06, "seed": 1}}'),
        ("cfg-b", f'{{"{lr}": "0.000001", "seed": 2}}'),  # a tracker that keeps text
        ("cfg-c", f'{{"{lr}": 5e-07, "seed": 3}}'),
    ):
        state.invoke(["ingest", "metrics", _export(root, run, config), "-q"])
    # alpha solves p-hard at its second iteration, zeta never does and forgets p-easy
    _dumps(root / "alpha", {0: {"p-easy": [1.0, 1.0], "p-hard": [0.0, 0.0]},
                            1: {"p-easy": [1.0, 1.0], "p-hard": [1.0, 0.0]}})  # fmt: skip
    _dumps(root / "zeta", {0: {"p-easy": [1.0, 1.0], "p-hard": [0.0, 0.0]},
                           1: {"p-easy": [0.0, 0.0], "p-hard": [0.0, 0.0]}})  # fmt: skip
    for run in ("alpha", "zeta"):
        state.invoke(["ingest", "rollouts", root / run, "--run", run, "-q"])
    _ifeval(root / "ifeval")
    state.invoke(["ingest", "rollouts", root / "ifeval", "--run", "ifeval", "-q"])
    state.invoke(["build"])
    yield state


# --------------------------------------------------------------------------- any run


def test_runs_lists_every_run_with_what_it_holds(built: Built) -> None:
    listed = built.invoke(["runs"]).stdout
    # an unknown state says when the run's data last landed (the time of this test's ingest)
    landed = r"unknown \(last data landed \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\)"
    body = [re.sub(landed, "unknown", re.sub(r"  +", "  ", line)) for line in listed.splitlines()]
    assert body[0] == "run id  name  state  sources  created  steps  holds  tags"
    assert body[2:12] == [  # created first (none here), then by id
        "alpha  -  -  -  -  -  rollouts  -",
        "cfg-a  cfg-a  unknown  wandb-export  -  3  tracker history  -",
        "cfg-b  cfg-b  unknown  wandb-export  -  3  tracker history  -",
        "cfg-c  cfg-c  unknown  wandb-export  -  3  tracker history  -",
        "ifeval  -  -  -  -  -  rollouts, reward data  -",
        "tbx_run  tbx_run  unknown  jsonl  -  6  tracker history, reward data  -",
        "trl  trl  finished  trl  -  4  rollouts, tracker history, reward data  -",
        "verl  -  -  -  -  -  rollouts  -",
        "verl:val  -  -  -  -  -  rollouts  -",
        "zeta  -  -  -  -  -  rollouts  -",
    ]
    assert body[12] == ""
    assert body[13].startswith("unknown: no source of the run states it")
    assert body[14].startswith("created -: no source of the run carries a clock time")
    found = json.loads(built.invoke(["runs", "--format", "json"]).stdout)
    assert {r["run_id"]: r["holds"] for r in found}["trl"] == ["rollouts", "history", "rewards"]


def test_summary_of_every_run_says_which_runs_it_cannot_cover(built: Built) -> None:
    result = built.invoke(["summary"])
    assert re.findall(r"^== run (\S+) ==$", result.stdout, flags=re.M) == [
        "alpha", "ifeval", "trl", "verl", "verl:val", "zeta"
    ]  # fmt: skip
    assert result.stderr == f"{CFG}\n{TBX}\n"


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["summary", "--run", "tbx_run"], TBX),
        (["rewards", "verl"], "verl: rollouts only; land per-function rewards (rollouts with"
         " reward columns, or obs ingest monitoring DIR --run verl) or a tracker history that"
         " logs the reward to see reward monitoring"),
        (["audit", "verl"], "verl: rollouts only; land its tracker history (obs ingest metrics"
         " PATH --run verl) to audit the logged metrics"),
        (["audit", "tbx_run"], "tbx_run: tracker history and reward data; land rollout dumps"
         " (obs ingest rollouts PATH --run tbx_run) to audit the logged metrics"),
        (["render-dashboard", "--run", "cfg-a"], "cfg-a: tracker history only; "
         + PROMPTS_FOR.format(run="cfg-a")),
    ],
)  # fmt: skip
def test_a_run_without_what_a_command_covers_gets_one_line(
    built: Built, args: list[str], line: str
) -> None:
    assert built.invoke(args, exit_code=1).stderr == f"Error: {line}\n"


@pytest.mark.parametrize(
    "args",
    [
        ["summary", "--run", "nope"],
        ["analyze", "nope"],
        ["rewards", "nope"],
        ["audit", "nope"],
        ["compare", "trl", "nope"],
        ["render-dashboard", "--run", "nope"],
    ],
)
def test_an_unknown_run_gets_one_line_naming_every_run(built: Built, args: list[str]) -> None:
    error = built.invoke(args, exit_code=1).stderr
    assert error == f"Error: {built.warehouse}: no run 'nope' (runs: {RUNS})\n"


def test_compare_says_what_a_run_lacks_that_another_has(built: Built) -> None:
    result = built.invoke(["compare", "verl", "trl", "tbx_run"])
    assert result.stdout.startswith("Comparing 3 runs:\n")
    assert result.stderr == (
        "verl: rollouts only; land its tracker history (obs ingest metrics PATH --run verl)"
        " to compare training metrics and config\n"
        "tbx_run: tracker history and reward data; land rollout dumps (obs ingest rollouts"
        " PATH --run tbx_run) to compare prompts\n"
    )


def test_the_dashboard_of_a_run_without_rollouts_opens_on_a_tab_with_data(
    built: Built, tmp_path: Path
) -> None:
    def opening(run: str) -> tuple[list[str], list[str], str]:
        """The page's active tab, its sections shown at load, and the command's stderr."""
        out = tmp_path / f"{run}.html"
        result = built.invoke(["render-dashboard", "--run", run, "--out", out])
        page = out.read_text()
        active = re.findall(r'<button role="tab" data-target="([^"]+)" class="active">', page)
        shown = re.findall(r'<div class="section" id="([^"]+)">', page)
        return active, shown, result.stderr

    assert opening("tbx_run") == (["rewards-0"], ["rewards-0"], f"{TBX}\n")
    assert opening("trl") == (["section-0"], ["section-0"], "")


# --------------------------------------------------------------------------- small ones


def test_runs_config_finds_a_dotted_key(built: Built) -> None:
    for value in ("1e-06", "0.000001"):
        found = built.invoke(["runs", "--config", f"actor_rollout_ref.actor.optim.lr={value}"])
        table = found.stdout.split("\n\n")[0].splitlines()[2:]  # the rows before the notes
        assert [line.split()[0] for line in table] == ["cfg-a", "cfg-b"]


def test_compare_shows_config_keys_plain_and_numbers_one_way(built: Built) -> None:
    text = built.invoke(["compare", "cfg-b", "cfg-a", "cfg-c", "--metrics", "loss"]).stdout
    config = text.split("Config keys that differ:\n")[1].splitlines()
    assert [re.sub(r"  +", "  ", line) for line in config] == [
        "key  cfg-b  cfg-a  cfg-c",
        "--------------------------------  -----  -----  -----",
        "actor_rollout_ref.actor.optim.lr  1e-06  1e-06  5e-07",
        "seed  2  1  3",
    ]


def test_compare_lists_the_prompt_table_in_the_order_given(built: Built) -> None:
    for first, second in (("zeta", "alpha"), ("alpha", "zeta")):
        text = built.invoke(["compare", first, second]).stdout
        table = text.split("Prompts both runs trained on:\n")[1].splitlines()
        row = re.sub(r"  +", "  ", table[2])
        learned = "0  1" if first == "zeta" else "1  0"
        forgotten = "1  0" if first == "zeta" else "0  1"
        delta = "0.75" if first == "zeta" else "-0.75"  # alpha's finals 1, 0.5; zeta's 0, 0
        assert row == f"{first}  {second}  2  {learned}  {forgotten}  {delta}"


def test_analyze_numbers_its_sections_one_to_twelve(built: Built) -> None:
    analysis = json.loads(built.invoke(["analyze", "cfg-a", "--format", "json"]).stdout)
    assert [s["number"] for s in analysis["sections"]] == list(range(1, 13))
    text = built.invoke(["analyze", "cfg-a"]).stdout
    titles = re.findall(r"^(\d+)\. ", text, flags=re.M)
    assert titles == [str(n) for n in range(1, 13)]


# --------------------------------------------------------------------------- headlines


SCALE = (
    "scores run from -0.75 to 0.5, not 0 to 1: set a threshold for this scale with obs build"
    " --vars '{pass_threshold: X}'"
)


@pytest.mark.parametrize(
    ("run", "line"),
    [
        ("ifeval", "solved: every instruction followed"),
        ("verl", "solved: a rollout scoring at least 0.5 (var pass_threshold)"),
        ("trl", f"solved: a rollout scoring at least 0.5 (var pass_threshold), but {SCALE}"),
    ],
)
def test_summary_says_what_solved_counted_and_a_scale_its_threshold_does_not_fit(
    built: Built, run: str, line: str
) -> None:
    text = built.invoke(["summary", "--run", run]).stdout.splitlines()
    assert text[1].startswith("iterations ") and text[4] == line


def _labels_and_notes(page: str) -> tuple[list[str], list[str]]:
    labels = re.findall(r'<div class="label">([^<]*)</div>', page)
    notes = re.findall(r'<p class="tab-note (?:scale|reward)-note"[^>]*>([^<]*)</p>', page)
    return labels, [html.unescape(n) for n in notes]


def test_dashboard_headlines_say_what_they_count(built: Built, tmp_path: Path) -> None:
    out = tmp_path / "ifeval.html"
    built.invoke(["render-dashboard", "--run", "ifeval", "--out", out])
    labels, notes = _labels_and_notes(out.read_text())
    assert labels[4:7] == [
        "mean rollout score, first → last",
        "prompts solved (every instruction followed), last iteration",
        "prompts learned (solved at an iteration)",
    ]
    assert "Current Mean Reward R" in labels
    # the reward tabs' R is the sum of the reward functions, not the dump's score
    what_r = (
        "The reward on these tabs is R, each sample's reward functions summed (S_i + V_i +"
        " format_score), not the rollouts' score: at step 1 R averages 2.300 and the score"
        " 0.600 (the mean rollout score of the training tabs)."
    )
    assert notes == [what_r, what_r]  # the Summary statistics and Reward signal tabs

    out = tmp_path / "trl.html"
    built.invoke(["render-dashboard", "--run", "trl", "--out", out])
    labels, notes = _labels_and_notes(out.read_text())
    assert labels[5] == "prompts solved (a rollout scoring at least 0.5), last iteration"
    summed = (
        "The reward on these tabs is R, each sample's reward functions summed (reward_fmt +"
        " reward_len), which here is the rollouts' score."
    )
    assert notes == [
        f"Solved and learned count a rollout scoring at least 0.5 (var pass_threshold), but"
        f" {SCALE}.",
        summed,
        summed,
    ]
