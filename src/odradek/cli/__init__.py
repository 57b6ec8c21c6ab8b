"""The ``odradek`` command (:mod:`odradek.cli.main`), one module per command group.

Each command imports what it runs inside its own function: the client alone takes about a
second to import, and ``odradek --help``, a mistyped flag, or the readiness probe a broker pod
runs every few seconds should not pay for the broker or the client they do not use. Those
imports carry the comment ``# on use (odradek.cli)``.
"""
