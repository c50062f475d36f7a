"""obs.runner: build a warehouse with dbt from Python, without the command line.

``Dbt`` runs dbt on the obs project (shipped in the package) against one
warehouse and lake, in this process; ``build_state`` decides what a build
must rebuild. Errors are ``DbtError`` (``obs.runner.errors``), one line each;
click is never imported here.

    from pathlib import Path
    from obs.runner.build import build_warehouse

    # as `obs build`: what changed since the last build (BuildFailed lists what broke)
    ran = build_warehouse(Path("warehouse/obs.duckdb"), Path("lake"))

``build_warehouse`` is ``obs build``; ``obs.runner.dbt.run_dbt`` runs any dbt
command on the project as it is.
"""
