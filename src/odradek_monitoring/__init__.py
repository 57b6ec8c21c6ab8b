"""odradek's monitoring tooling: what builds and tries the dashboards and alerts, never what a
broker runs.

* :mod:`.dashboards`: the Grafana dashboards as code (grafana-foundation-sdk);
* :mod:`.alerts`: the alert rules, and the rules file they are written as (PyYAML);
* :mod:`.generate`: writes the chart's dashboards JSON, its rules file and
  ``docs/metrics.md`` (``make generate-monitoring``);
* :mod:`.prometheus`: a local Prometheus server scraping given targets (``odradek cluster
  --prometheus``, the tests, ``make dashboards``);
* :mod:`.render`: dashboards drawn to PNG from a live Prometheus (matplotlib).

Their libraries are the ``odradek[monitoring]`` extra, so this is a package of its own beside
``odradek``: a plain ``pip install odradek`` imports every module of ``odradek``
(``tests/test_runtime_package.py``). The metric names all of it queries are
:mod:`odradek.metrics.catalog`'s (and the lag and operator catalogs beside it), the one
source; this package only reads them.
"""
