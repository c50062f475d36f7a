"""Pure ``DataFrame -> plotly Figure`` functions, one per chart, by domain. No I/O.

``base`` holds the palettes, the charts' look and the helpers every figure
shares; ``prompts``, ``curriculum``, ``instructions``, ``comparison``,
``rewards`` and ``agent`` draw the charts. Each figure function takes the
rows its query in ``reports/queries/`` returns (for one run, or for every
compared run) and the chart's title; the chart registry (``obs.reports.charts``)
says which query, which title and which page each chart has. Large arrays go
in as numpy arrays so Plotly writes them in its compact binary form.
"""
